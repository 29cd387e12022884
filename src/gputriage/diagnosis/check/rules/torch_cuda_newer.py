"""torch built against a CUDA newer than the driver supports."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def _version(text: str) -> tuple[int, int]:
    major, _, minor = str(text).partition(".")
    return int(major), int(minor.split(".")[0] or 0)


def evaluate(ev: Evidence) -> list[Finding]:
    build, driver = ev.get("torch.cuda.build_version"), ev.get("driver.cuda_version")
    if not build or not driver:
        return []
    b, d = _version(build), _version(driver)
    if b <= d:
        return []
    evidence = {
        "torch.cuda.build_version": build,
        "driver.cuda_version": driver,
        "driver.version": ev.get("driver.version"),
    }
    if b[0] > d[0]:
        return [RULE.finding(evidence, severity=Severity.critical, subject="torch")]
    # same major: CUDA minor-version compatibility runs it, minus features needing the newer driver (PTX JIT)
    return [RULE.finding(evidence, severity=Severity.info, subject="torch", say="minor_newer")]


RULE = Rule(
    FindingSpec(
        id="torch.cuda_newer_than_driver",
        step=1,
        severity=Severity.critical,
        symptom="torch's CUDA build is newer than the CUDA version the driver supports",
        cause="The framework (or container image) was built for a newer driver than the host has",
        decision="Upgrade the host driver, or install the torch build (or container image) for the driver's CUDA "
        "version",
        commands=CHECK,
        condition="torch.version.cuda > driver CUDA version: major newer → critical, minor newer → info",
        says={
            "minor_newer": Wording(
                cause="Same CUDA major version: minor-version compatibility runs it, but kernels shipped only as newer "
                "PTX cannot be JIT-compiled by this driver"
            )
        },
    ),
    evaluate,
)

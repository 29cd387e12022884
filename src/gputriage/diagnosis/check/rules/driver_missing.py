"""No NVIDIA driver or no GPU: nothing GPU-side can work (playbook task 1)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording


def evaluate(ev: Evidence) -> list[Finding]:
    failure = ev.unavailable("driver.nvml")
    if failure is not None and failure.reason in ("no_driver", "not_installed", "error", "timeout"):
        return [RULE.finding({"driver.nvml": str(failure)}, severity=Severity.critical, subject="host")]
    if ev.get("driver.nvml") and ev.get("gpu.count") == 0:
        return [RULE.finding({"gpu.count": 0}, severity=Severity.critical, subject="host", say="no_gpu")]
    return []


RULE = Rule(
    FindingSpec(
        id="driver.missing",
        step=1,
        severity=Severity.critical,
        symptom="No NVIDIA driver answers: NVML cannot be loaded or finds no GPU",
        cause="The kernel driver is not installed or not loaded (secure boot, missing module), or this machine has no "
        "GPU",
        decision="Install/load the NVIDIA driver (nvidia-smi -L must list the GPU) before touching frameworks; "
        "on secure-boot hosts sign or enroll the module",
        commands=CHECK,
        condition="NVML init fails with driver-not-loaded / library-not-found, or the device count is 0",
        says={
            "no_gpu": Wording(
                symptom="The NVIDIA driver is loaded but enumerates no GPU",
                cause="The GPU is not passed through (VM/container), is disabled, or has fallen off the bus",
            )
        },
    ),
    evaluate,
)

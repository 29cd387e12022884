"""torch is installed but cannot use CUDA on a machine with GPUs (playbook task 11)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    if not ev.gpus or ev.get("torch.version") is None:
        return []
    build = ev.get("torch.cuda.build_version")
    if build is None:
        evidence = {
            "torch.version": ev.get("torch.version"),
            "torch.cuda.build_version": None,
            "gpu.count": len(ev.gpus),
        }
        return [CPU_BUILD.finding(evidence, severity=Severity.critical, subject="torch")]
    if ev.get("torch.cuda.available") is False:
        return [
            RULE.finding(
                {
                    "torch.cuda.available": False,
                    "torch.cuda.build_version": build,
                    "driver.cuda_version": ev.get("driver.cuda_version"),
                    "torch.cuda.error": ev.get("torch.cuda.error"),
                },
                severity=Severity.critical,
                subject="torch",
            )
        ]
    return []


CPU_BUILD = FindingSpec(
    id="torch.cpu_build",
    step=1,
    severity=Severity.critical,
    commands=CHECK,
    needs=("gpu", "torch"),
    symptom="torch is a CPU-only build on a machine with GPUs",
    cause="pip/conda installed the CPU wheel of torch",
    decision="Install a CUDA build of torch that matches the driver (the index URL for your CUDA version from "
    "pytorch.org)",
    condition="GPUs present, torch importable, no CUDA build version",
)
RULE = Rule(
    FindingSpec(
        id="torch.cuda_unavailable",
        step=1,
        severity=Severity.critical,
        symptom="torch.cuda.is_available() is False although NVML sees GPUs",
        cause="A dependency mismatch: torch's CUDA build is newer than the driver, libraries are missing, or the GPUs "
        "are "
        "hidden (CUDA_VISIBLE_DEVICES)",
        decision="Fix the environment before optimizing anything: align torch's CUDA build with the driver "
        "(nvidia-smi's CUDA Version) and check CUDA_VISIBLE_DEVICES",
        commands=CHECK,
        condition="GPUs present, torch importable, torch.cuda.is_available() False (or a CPU-only build: "
        "torch.cpu_build)",
        needs=("gpu",),
    ),
    evaluate,
    also=(CPU_BUILD,),
)

"""The GPU's compute capability is not in torch's compiled arch list."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity

# NVIDIA's bf16 arithmetic starts with compute capability 8.0 (Ampere): said in the evidence, it decides nothing
BF16_FROM = (8, 0)


def capability(text: str) -> tuple[int, int]:
    """ "9.0" as (9, 0)."""
    major, minor = (int(x) for x in text.split("."))
    return major, minor


def supported(device: str, arch_list: list[str]) -> bool:
    """True when the build has SASS for this capability, or PTX of an equal or lower one (JIT)."""
    cc = capability(device)
    for arch in arch_list:
        kind, _, num = arch.partition("_")
        digits = "".join(ch for ch in num if ch.isdecimal())
        if not digits:
            continue
        built = divmod(int(digits), 10)  # sm_90 -> (9, 0), sm_100 -> (10, 0)
        if kind == "sm" and built == cc:
            return True
        if kind == "sm" and built[0] == cc[0] and built <= cc and not num.endswith("a"):
            return True  # same-major SASS is binary compatible
        if kind == "compute" and built <= cc:
            return True
    return False


def evaluate(ev: Evidence) -> list[Finding]:
    arch_list = ev.get("torch.cuda.arch_list")
    if not arch_list:
        return []
    out = []
    for i in ev.gpus:
        cap = ev.gpu(i, "compute_capability")
        if cap and not supported(cap, arch_list):
            bf16 = capability(cap) >= BF16_FROM
            evidence = {f"gpu.{i}.compute_capability": cap, "torch.cuda.arch_list": arch_list, "bf16_capable": bf16}
            out.append(RULE.finding(evidence, severity=Severity.critical, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    FindingSpec(
        id="torch.arch_missing",
        step=1,
        severity=Severity.critical,
        symptom="The framework build has no kernels for this GPU's architecture",
        cause="torch was compiled for other compute capabilities (an old wheel on a new GPU, e.g. sm_90 missing on "
        "Hopper): kernels fail with 'no kernel image is available' or fall back to slow PTX JIT",
        decision="Install a torch build whose arch list includes this GPU (newer wheel or matching CUDA index); "
        "check with torch.cuda.get_arch_list()",
        commands=CHECK,
        condition="device capability has neither SASS (same major, <= minor) nor lower PTX in "
        "torch.cuda.get_arch_list()",
        needs=("gpu",),
    ),
    evaluate,
)

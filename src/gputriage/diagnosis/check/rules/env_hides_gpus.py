"""CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hiding GPUs.

CUDA reads CUDA_VISIBLE_DEVICES as a comma-separated list of indices or UUIDs (GPU-..., MIG-...,
unique prefixes allowed) and stops at the first entry that names no device: `0,7` on a 2-GPU
machine shows GPU 0 only, `garbage` or `GPU-ffff` shows none.
"""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

HIDING = {"", "-1", "none", "void", "nodevfiles"}


def visible(value: str, count: int, uuids: list[str]) -> tuple[list[str], str | None]:
    """The entries CUDA will use, and the first it stops at (None when it reads them all)."""
    used: list[str] = []
    for entry in (x.strip() for x in value.split(",")):
        if entry.lstrip("-").isdecimal():
            if not 0 <= int(entry) < count:
                return used, entry
        elif entry.upper().startswith(("GPU-", "MIG-")):
            if entry.upper().startswith("GPU-") and not any(u.upper().startswith(entry.upper()) for u in uuids):
                return used, entry
        else:
            return used, entry
        used.append(entry)
    return used, None


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        value = ev.reading(f"env.{var}")
        if not isinstance(value, str):
            continue
        evidence = {f"env.{var}": value, "gpu.count": ev.get("gpu.count")}
        if value.strip().lower() in HIDING:
            out.append(RULE.finding(evidence, severity=Severity.warn, subject="env"))
            continue
        if var != "CUDA_VISIBLE_DEVICES" or not ev.gpus:
            continue
        uuids = [u for u in (ev.gpu(i, "uuid") for i in ev.gpus) if isinstance(u, str)]
        used, stop = visible(value, len(ev.gpus), uuids)
        if stop is None:
            continue
        evidence |= {"cuda_sees": used, "stops_at": stop}
        words = {"value": value, "stop": stop, "sees": ", ".join(used)}
        if not used:
            out.append(RULE.finding(evidence, severity=Severity.warn, subject="env", say="none_named", fill=words))
        else:
            out.append(CUT_SHORT.finding(evidence, severity=Severity.warn, subject="env", say="stops", fill=words))
    return out


CUT_SHORT = FindingSpec(
    id="env.visible_devices_cut_short",
    step=1,
    severity=Severity.warn,
    commands=CHECK,
    needs=("gpu",),
    symptom="CUDA_VISIBLE_DEVICES lists a device that does not exist, and CUDA ignores what follows it",
    cause="An index past the GPUs this machine has, a UUID of another machine's GPU, or a typo: CUDA stops reading "
    "the list there, so the job runs on fewer GPUs than it asks for",
    decision="List only this machine's GPUs (`nvidia-smi -L` gives their indices and UUIDs)",
    condition="an entry that is not an index below the GPU count, a known GPU UUID (or prefix) or a MIG UUID, after "
    "valid entries",
    says={"stops": Wording(symptom="CUDA_VISIBLE_DEVICES={value!r}: CUDA stops at {stop!r} and sees only {sees}")},
)
RULE = Rule(
    FindingSpec(
        id="env.gpus_hidden",
        step=1,
        severity=Severity.warn,
        symptom="An environment variable hides every GPU from CUDA",
        cause="CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES is empty, -1, 'none', or names no device of this machine "
        "(garbage, an index past its GPUs, another machine's UUID): frameworks see no device and run on CPU",
        decision="Unset it or list the GPUs to use (CUDA_VISIBLE_DEVICES=0,1; `nvidia-smi -L` lists them)",
        commands=CHECK,
        condition="value is '', -1, none, void or NoDevFiles, or CUDA_VISIBLE_DEVICES's first entry names no GPU here",
        says={
            "none_named": Wording(symptom="CUDA_VISIBLE_DEVICES={value!r} hides every GPU: {stop!r} names no device")
        },
    ),
    evaluate,
    also=(CUT_SHORT,),
)

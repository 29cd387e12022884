"""CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hiding GPUs."""

from gputriage.diagnosis.rules.base import Evidence, Rule
from gputriage.model.finding import Finding, Severity

HIDING = {"", "-1", "none", "void", "nodevfiles"}


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for var in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        value = ev.reading(f"env.{var}")
        if isinstance(value, str) and value.strip().lower() in HIDING:
            out.append(RULE.finding(Severity.warn, {f"env.{var}": value, "gpu.count": ev.get("gpu.count")},
                                    subject="env"))
    return out


RULE = Rule(
    id="env.gpus_hidden", step=1, severity=Severity.warn,
    symptom="An environment variable hides every GPU from CUDA",
    cause="CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES is empty, -1 or 'none': frameworks see no device and run on "
          "CPU",
    decision="Unset it or list the GPUs to use (CUDA_VISIBLE_DEVICES=0,1)",
    condition="value is '', -1, none, void or NoDevFiles",
    evaluate=evaluate,
)

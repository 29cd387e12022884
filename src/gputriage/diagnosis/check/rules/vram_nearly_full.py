"""VRAM 90-95% used: 'dangerously full' (playbook's inference checklist)."""

from gputriage.diagnosis.check.base import CHECK, Evidence, gib, pct
from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.thresholds import VRAM_NEARLY_FULL, VRAM_PRESSURE
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        used, total = ev.gpu(i, "memory.used_bytes"), ev.gpu(i, "memory.total_bytes")
        if used is None or not total:
            continue
        share = pct(used, total)
        if share >= VRAM_NEARLY_FULL.value:
            sev = Severity.critical if share >= VRAM_PRESSURE.value else Severity.warn
            out.append(
                RULE.finding(
                    {
                        f"gpu.{i}.memory.used_bytes": used,
                        f"gpu.{i}.memory.total_bytes": total,
                        "used_pct": share,
                        "free": gib(total - used),
                    },
                    severity=sev,
                    subject=f"gpu.{i}",
                )
            )
    return out


RULE = Rule(
    FindingSpec(
        id="vram.nearly_full",
        step=3,
        severity=Severity.warn,
        symptom="GPU memory is nearly full",
        cause="Little headroom for transient peaks (long sequences, larger batches, allocator fragmentation): the next "
        "spike is an out-of-memory error, and near-OOM allocators thrash",
        decision="Keep 5-10% headroom: lower batch or sequence length, gradient checkpointing, quantization for "
        "inference, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation",
        commands=CHECK,
        condition="used >= {vram_nearly_full_pct:g}% of total (critical >= {vram_pressure_pct:g}%)",
        thresholds=(VRAM_NEARLY_FULL, VRAM_PRESSURE),
        needs=("gpu",),
    ),
    evaluate,
)

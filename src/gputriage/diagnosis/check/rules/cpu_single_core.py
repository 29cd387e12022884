"""One core saturated while the rest idle: a single-threaded input pipeline (playbook task 6)."""

from gputriage.diagnosis.check.base import CHECK, Evidence
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity, Threshold, Wording

HOT_CORE_PCT = Threshold(
    "hot_core_pct",
    95.0,
    "%",
    "busy share of a core that is saturated",
    "GPU triage playbook, task 6: one core at 100%, others idle",
)
MEDIAN_IDLE_PCT = Threshold(
    "median_idle_core_pct", 30.0, "%", "median core busy share under which the rest of the host idles", "judgement"
)
GPU_BUSY_PCT = Threshold(
    "gpu_busy_util_pct", 80.0, "%", "GPU-Util at which the hot thread is the one feeding a busy GPU", "judgement"
)


def evaluate(ev: Evidence) -> list[Finding]:
    cores = ev.get("host.cpu.per_core_busy_pct")
    if len(cores or []) <= 1:  # one core: no others to idle beside it
        return []
    hot = [i for i, v in enumerate(cores) if v >= HOT_CORE_PCT.value]
    median = ev.get("host.cpu.median_core_busy_pct")
    if not hot or median is None or median >= MEDIAN_IDLE_PCT.value:
        return []
    evidence = {
        "hot_cores": hot,
        "hot_core_busy_pct": [cores[i] for i in hot],
        "host.cpu.median_core_busy_pct": median,
        "host.cpu.count": len(cores),
        "host.cpu.window_ms": ev.get("host.cpu.window_ms"),
    }
    busy = {i: ev.gpu(i, "util.gpu_pct") for i in ev.gpus if (ev.gpu(i, "util.gpu_pct") or 0) >= GPU_BUSY_PCT.value}
    if busy:
        return [
            RULE.finding(
                evidence | {f"gpu.{i}.util.gpu_pct": u for i, u in busy.items()},
                severity=Severity.info,
                subject="host",
                say="feeds_a_busy_gpu",
            )
        ]
    return [RULE.finding(evidence, severity=Severity.warn, subject="host")]


RULE = Rule(
    FindingSpec(
        id="cpu.single_core_saturated",
        step=4,
        severity=Severity.warn,
        symptom="A few CPU cores are saturated while most are idle",
        cause="Typical of Python data loaders, tokenization or preprocessing running in one thread",
        decision="Parallelize preprocessing: DataLoader num_workers, pre-tokenize, use a compiled tokenizer, or move "
        "augmentation to the GPU",
        commands=CHECK,
        condition="a core >= {hot_core_pct:g}% busy while the median core < {median_idle_core_pct:g}% (over the "
        "window); info only when a GPU is >= {gpu_busy_util_pct:g}% busy",
        thresholds=(HOT_CORE_PCT, MEDIAN_IDLE_PCT, GPU_BUSY_PCT),
        needs=("gpu",),
        says={
            "feeds_a_busy_gpu": Wording(
                cause="One thread drives a busy GPU (kernel launches, spin-waiting in synchronizations): expected "
                "while the GPU is the bottleneck",
                decision="Nothing to do while the GPU stays busy; if GPU-Util drops, this thread is the limit — see "
                "`gputriage run`",
            )
        },
    ),
    evaluate,
)

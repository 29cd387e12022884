"""One core saturated while the rest idle: a single-threaded input pipeline (seed task 6)."""

from gputriage.model.finding import Finding, Severity
from gputriage.rules.base import Evidence, Rule

HOT_CORE_PCT = 95.0
MEDIAN_IDLE_PCT = 30.0
GPU_BUSY_PCT = 80.0  # with a GPU this busy, one hot thread is the one feeding it


def evaluate(ev: Evidence) -> list[Finding]:
    cores = ev.get("host.cpu.per_core_busy_pct")
    if not cores or len(cores) < 2:
        return []
    hot = [i for i, v in enumerate(cores) if v >= HOT_CORE_PCT]
    median = ev.get("host.cpu.median_core_busy_pct")
    if not hot or median is None or median >= MEDIAN_IDLE_PCT:
        return []
    evidence = {"hot_cores": hot, "hot_core_busy_pct": [cores[i] for i in hot],
                "host.cpu.median_core_busy_pct": median, "host.cpu.count": len(cores),
                "host.cpu.window_ms": ev.get("host.cpu.window_ms")}
    busy = {i: ev.gpu(i, "util.gpu_pct") for i in ev.gpus if (ev.gpu(i, "util.gpu_pct") or 0) >= GPU_BUSY_PCT}
    if busy:
        return [RULE.finding(Severity.info, evidence | {f"gpu.{i}.util.gpu_pct": u for i, u in busy.items()},
                             subject="host", cause="One thread drives a busy GPU (kernel launches, spin-waiting in "
                             "synchronizations): expected while the GPU is the bottleneck",
                             decision="Nothing to do while the GPU stays busy; if GPU-Util drops, this thread is "
                                      "the limit — see `gputriage run`")]
    return [RULE.finding(Severity.warn, evidence, subject="host")]


RULE = Rule(
    id="cpu.single_core_saturated", step=4,
    symptom="A few CPU cores are saturated while most are idle",
    cause="Typical of Python data loaders, tokenization or preprocessing running in one thread",
    decision="Parallelize preprocessing: DataLoader num_workers, pre-tokenize, use a compiled tokenizer, or move "
             "augmentation to the GPU",
    threshold=f"a core >= {HOT_CORE_PCT:.0f}% busy while the median core < {MEDIAN_IDLE_PCT:.0f}% (over the window); "
              f"info only when a GPU is >= {GPU_BUSY_PCT:.0f}% busy",
    evaluate=evaluate,
)

"""Several processes hold memory on one GPU (playbook task 5)."""

from gputriage.diagnosis.check.base import CHECK, Evidence, gib
from gputriage.diagnosis.rule import Rule
from gputriage.model.finding import Finding, FindingSpec, Severity


def evaluate(ev: Evidence) -> list[Finding]:
    out = []
    for i in ev.gpus:
        procs = ev.gpu(i, "processes") or []
        if len(procs) > 1:
            listed = [
                {
                    "pid": p["pid"],
                    "name": p.get("name"),
                    "user": p.get("user"),
                    "used": gib(p["used_bytes"]) if p.get("used_bytes") is not None else "n/a",
                }
                for p in procs
            ]
            out.append(RULE.finding({f"gpu.{i}.processes": listed}, severity=Severity.warn, subject=f"gpu.{i}"))
    return out


RULE = Rule(
    FindingSpec(
        id="vram.shared_by_processes",
        step=3,
        severity=Severity.warn,
        symptom="More than one process holds memory on the same GPU",
        cause="Processes share the GPU's memory and SMs: even an idle model server reserves VRAM, and concurrent "
        "kernels time-slice, so each job runs slower and OOMs sooner",
        decision="Consolidate into one process (a shared model server) or isolate: one job per GPU, MIG, or scheduler "
        "constraints",
        commands=CHECK,
        condition="2 or more compute/graphics processes on one GPU",
        needs=("gpu",),
    ),
    evaluate,
)

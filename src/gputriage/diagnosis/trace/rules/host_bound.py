"""The GPU idles while the host computes: in framework ops on CPU tensors, on a result it read back, or in the loop's
own code outside ops and the DataLoader (which the window shows elsewhere: a training framework's hooks and
logging, the workload's own work between steps)."""

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.trace.base import FINDING_MIN, TRACE, verdict_words
from gputriage.diagnosis.trace.evidence import RankEvidence
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording

SYMPTOM = "GPU idle {host_idle_pct}% of the window while the host computes"
IN_OPS = "{host_in_ops_pct}% inside framework ops that launch no GPU work (CPU tensors): {in_ops}"
IN_LOOP = (
    "{host_loop_pct}% outside framework ops and the DataLoader, whose own events the window shows elsewhere: the "
    "loop's own host work (a training framework's hooks, callbacks and logging, the workload's code between steps)"
)
AFTER_READ = (
    "{host_after_read_pct}% after reading a result back to the host, outside framework ops (numpy, Python), read "
    "by {read_by}"
)


def evaluate(ev: RankEvidence) -> list[Finding]:
    a = ev.window
    idle_pct = ev.idle_pct("host_in_ops", "host_after_read", "host_loop")
    if idle_pct < FINDING_MIN.value:
        return []
    in_ops, after_read, in_loop = ev.idle_pct("host_in_ops"), ev.idle_pct("host_after_read"), ev.idle_pct("host_loop")
    where = [name for name, pct in (("in_ops", in_ops), ("after_read", after_read)) if pct]
    fill = {
        "host_idle_pct": idle_pct,
        "host_in_ops_pct": in_ops,
        "host_after_read_pct": after_read,
        "host_loop_pct": in_loop,
        "in_ops": ", ".join(f"{h.op} ({h.gpu_idle_us / 1000:.1f} ms)" for h in a.host_work if h.where == "in_ops"),
        "read_by": ", ".join(f"{h.op} ×{h.gaps}" for h in a.host_work if h.where == "after_read"),
    }
    evidence = {
        "host_in_ops_pct": in_ops,
        "host_after_read_pct": after_read,
        "host_loop_pct": in_loop,
        "by_op": [
            {"op": h.op, "where": h.where, "gaps": h.gaps, "gpu_idle_us": h.gpu_idle_us} for h in a.host_work[:3]
        ],
    }
    say = "in_loop" if in_loop >= in_ops + after_read else "_and_".join(where) or "default"
    return [RULE.finding(evidence, subject=ev.subject, say=say, fill=fill, impact=idle_pct / 100)]


RULE = Rule(
    FindingSpec(
        id="trace.host_bound",
        **verdict_words(B.host_bound),
        severity=Severity.warn,
        commands=TRACE,
        condition="GPU idle while the host computes in framework ops, after reading a result back from the GPU, or "
        "in the loop's own code outside ops and the DataLoader (seen elsewhere in the window) >= {finding_min_pct:g}% "
        "of the window",
        thresholds=(FINDING_MIN,),
        needs=("trace",),
        says={
            "default": Wording(symptom=SYMPTOM),
            "in_ops": Wording(symptom=SYMPTOM, cause=IN_OPS),
            "after_read": Wording(symptom=SYMPTOM, cause=AFTER_READ),
            "in_ops_and_after_read": Wording(symptom=SYMPTOM, cause=f"{IN_OPS}; {AFTER_READ}"),
            "in_loop": Wording(symptom=SYMPTOM, cause=IN_LOOP),
        },
    ),
    evaluate,
)

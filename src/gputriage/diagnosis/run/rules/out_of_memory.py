"""The workload ran out of GPU memory: PyTorch's caching allocator raised, as the workload reported it (step 3)."""

from __future__ import annotations

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.numbers import GIB, MIB
from gputriage.model.window import Windows


def ooms_raised(host: Windows) -> float:
    """The out-of-memory errors the workload's allocator raised over the run (0 where it reported none)."""
    return max((x for x in host.column("ooms_total") if x is not None), default=0.0) if len(host) else 0.0


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The errors a command run raised, with the largest allocation that failed."""
    ooms = ooms_raised(ev.host)
    if not ev.workload or ooms < 1:
        return []
    asked = max((x for x in ev.host.column("oom_requested_bytes") if x is not None), default=None)
    reserved = [x for x in ev.host.column("allocator_reserved_bytes") if x is not None]
    evidence = {
        "ooms": ooms,
        "requested_mib": round(asked / MIB, 1) if asked else None,
        "allocator_reserved_max_gib": round(max(reserved) / GIB, 2) if reserved else None,
    }
    return [
        RULE.finding(
            {k: v for k, v in evidence.items() if v is not None},
            subject="workload",
            say="sized" if asked else "raised",
            fill={"ooms": ooms, "requested_mib": asked / MIB if asked else None},
        )
    ]


RULE = Rule(
    FindingSpec(
        id="run.out_of_memory",
        step=3,
        severity=Severity.critical,
        commands=("run",),
        needs=("workload",),
        symptom="The workload ran out of GPU memory",
        cause="An allocation did not fit: the peak of weights, optimizer state, activations and the allocator's "
        "cache (blocks reserved but not in use: fragmentation) exceeded what the GPU had free; another process may "
        "hold part of it",
        decision="Lower the peak: a smaller batch or sequence, gradient checkpointing, bf16 weights and activations; "
        "where much memory is reserved but unused, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; check what "
        "else holds memory on the GPU (`gputriage check`)",
        condition="PyTorch's caching allocator raised an out-of-memory error in the workload (its counters, "
        "reported by Python workloads under `run`)",
        says={
            "raised": Wording(symptom="The workload ran out of GPU memory ({ooms:.0f} error(s))"),
            "sized": Wording(
                symptom="The workload ran out of GPU memory ({ooms:.0f} error(s)): an allocation of "
                "{requested_mib:,.0f} MiB did not fit"
            ),
        },
    ),
    evaluate,
)

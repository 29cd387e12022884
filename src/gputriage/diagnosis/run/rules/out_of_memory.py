"""The workload ran out of GPU memory: PyTorch's caching allocator raised, as the workload reported it (step 3).

Where the workload saved the allocator's snapshot at the error (Python workloads under `run` and `monitor()`), the
memory judge read it (`run.snapshots`): the finding points to the cause it named (one of the five `memory.*`
findings, added beside it, with the Python lines that filled the GPU) and to the kept snapshot; the generic fixes
are said only where no cause is named."""

from __future__ import annotations

from typing import Any

import msgspec

from gputriage.diagnosis.rule import Rule
from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.snapshots import Judged
from gputriage.model.finding import Finding, FindingSpec, Severity, Wording
from gputriage.model.memory import short_label, size_text
from gputriage.model.numbers import GIB, MIB
from gputriage.model.recording import Recording
from gputriage.model.window import Windows

OWN = ("run", "monitor")  # a workload's own run (a command, a block of code), not a GPU watched


def ooms_raised(host: Windows) -> float:
    """The out-of-memory errors the workload's allocator raised over the run (0 where it reported none)."""
    return max((x for x in host.column("ooms_total") if x is not None), default=0.0) if len(host) else 0.0


def ooms_seen(rec: Recording) -> float:
    """The errors the allocator's counters reported, or at least one for each process that saved a snapshot at one
    (a workload that fails at once may end before its counters are read)."""
    return max(ooms_raised(rec.windows.host), float(len({d.pid for d in rec.memory if d.kind == "oom"})))


def evaluate(ev: RunEvidence) -> list[Finding]:
    """The errors a workload raised, with the largest allocation that failed; the cause the allocator's snapshot
    names, where it was kept."""
    ooms = ooms_seen(ev.rec)
    if ev.rec.kind not in OWN or ooms < 1:
        return []
    snap = ev.oom_snapshot
    asked = max((x for x in ev.host.column("oom_requested_bytes") if x is not None), default=None)
    asked = asked or (snap.dump.requested_bytes if snap is not None else None)
    reserved = [x for x in ev.host.column("allocator_reserved_bytes") if x is not None]
    evidence: dict[str, Any] = {
        "ooms": ooms,
        "requested_mib": round(asked / MIB, 1) if asked else None,
        "allocator_reserved_max_gib": round(max(reserved) / GIB, 2) if reserved else None,
    }
    fill: dict[str, Any] = {"ooms": ooms, "requested_mib": asked / MIB if asked else None}
    if snap is None:
        return [RULE.finding(_known(evidence), subject="workload", say="sized" if asked else "raised", fill=fill)]
    evidence["snapshot"] = fill["snapshot"] = snap.dump.snapshot
    named = _named(snap)
    if named is None:
        say = "kept_sized" if asked else "kept"
        return [RULE.finding(_known(evidence), subject="workload", say=say, fill=fill)]
    report = snap.report
    assert report is not None and report.cause is not None and report.state.oom is not None
    oom = report.state.oom
    evidence["cause"] = fill["cause"] = report.cause
    evidence["line"] = oom.line
    fill["asked"] = size_text(oom.requested_bytes)
    fill["where"] = _where(oom.line, oom.function)
    say = "named_" + report.cause.split(".", 1)[1]
    return [RULE.finding(_known(evidence), subject="workload", say=say, fill=fill), named]


def _known(evidence: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in evidence.items() if v is not None}


def _named(snap: Judged) -> Finding | None:
    """The memory judge's finding that names the error's cause, about the sampled GPU it happened on."""
    report = snap.report
    if report is None or report.cause is None or report.state.oom is None:
        return None
    f = next((f for f in report.findings if f.id == report.cause), None)
    if f is None or snap.gpu is None:
        return f
    return msgspec.structs.replace(f, subject=f"gpu.{snap.gpu}")


def _where(line: str | None, function: str | None) -> str:
    """'train.py:42 (step)': the line that asked, as short as the report's tables write it."""
    if not line:
        return "a line the stack does not show"
    file, _, number = line.rpartition(":")
    where = short_label(file, int(number)) if number.isdigit() else line
    return f"{where} ({function})" if function else where


RAISED = "The workload ran out of GPU memory ({ooms:.0f} error(s))"
SIZED = RAISED + ": an allocation of {requested_mib:,.0f} MiB did not fit"
KEPT = "; the allocator's snapshot at the error is kept: `gputriage memory {snapshot}` lists the lines that held memory"
NAMED = RAISED + ": {asked} asked at {where} did not fit — "
NAMED_CAUSE = (
    "The allocator's snapshot at the error names the cause: {cause}, whose finding in this report names the Python "
    "lines that held the memory"
)
NAMED_DECISION = (
    "Do what {cause} says, at the lines it names; the snapshot is kept: `gputriage memory {snapshot}` lists every "
    "line, and PyTorch's memory_viz draws it"
)
CAUSES = {  # each cause the memory judge names (`diagnosis.memory.judge.CAUSES`), in a few words
    "request_too_large": "one allocation larger than the GPU could ever give this process",
    "growing": "live memory rose step after step until it failed (tensors kept across steps)",
    "other_process": "another process held the memory that was missing",
    "fragmented": "the allocator's cache held the bytes, in no block as large as the request (fragmentation)",
    "peak_near_capacity": "the peak of what the workload holds reached the GPU's capacity",
}
DECISION = (
    "Lower the peak: a smaller batch or sequence, gradient checkpointing, bf16 weights and activations; where much "
    "memory is reserved but unused, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; check what else holds memory "
    "on the GPU (`gputriage check`)"
)
RULE = Rule(
    FindingSpec(
        id="run.out_of_memory",
        step=3,
        severity=Severity.critical,
        commands=OWN,
        needs=("workload",),
        symptom="The workload ran out of GPU memory",
        cause="An allocation did not fit: the peak of weights, optimizer state, activations and the allocator's "
        "cache (blocks reserved but not in use: fragmentation) exceeded what the GPU had free; another process may "
        "hold part of it",
        decision=DECISION,
        condition="PyTorch's caching allocator raised an out-of-memory error in the workload (its counters, "
        "reported by Python workloads under `run` and `monitor()`, or the snapshot it saved at the error); the "
        "cause is the one the memory judge names from that snapshot",
        says={
            "raised": Wording(symptom=RAISED),
            "sized": Wording(symptom=SIZED),
            "kept": Wording(symptom=RAISED, decision=DECISION + KEPT),
            "kept_sized": Wording(symptom=SIZED, decision=DECISION + KEPT),
            **{
                f"named_{cause}": Wording(symptom=NAMED + words, cause=NAMED_CAUSE, decision=NAMED_DECISION)
                for cause, words in CAUSES.items()
            },
        },
    ),
    evaluate,
)

"""The memory judge: the allocator's state read from a snapshot, the rules over it, the verdict on an out-of-memory
error (the one cause named) and its summary; and the seam `run`'s judge calls with a snapshot its workload saved."""

from __future__ import annotations

from typing import Mapping

import msgspec

from gputriage.diagnosis.finish import finish
from gputriage.diagnosis.memory.evidence import Evidence, size
from gputriage.diagnosis.rule import evaluate_all, rules_of
from gputriage.diagnosis.verify import Context
from gputriage.memory.analyze import analyze
from gputriage.memory.safe_pickle import SnapshotError
from gputriage.memory.snapshot import Snapshot, read
from gputriage.model.finding import Severity
from gputriage.model.memory import MemoryDump, MemoryReport, MemoryState, ProcessMemory
from gputriage.model.owner import ProcessOwner

CAUSES = (  # the findings that name the kind of an out-of-memory error
    "memory.request_too_large",
    "memory.growing",
    "memory.other_process",
    "memory.fragmented",
    "memory.peak_near_capacity",
)


def _summary(state: MemoryState, cause: str | None) -> str:
    held = f"{size(state.allocated_bytes)} live in {size(state.reserved_bytes)} reserved"
    if state.oom is None:
        return f"no out-of-memory error in this snapshot; GPU {state.device}: {held}"
    asked = f"an allocation of {size(state.oom.requested_bytes)} failed on GPU {state.device} ({held})"
    if cause is None:
        pending = (
            f"{size(state.pending_free_bytes)} freed but awaiting another stream's work (record_stream), or "
            if state.pending_free_bytes
            else ""
        )
        return (
            f"{asked}; no cause named: the snapshot does not account for the memory that was missing ({pending}held "
            "outside PyTorch's caching allocator: NCCL, cuBLAS workspaces, another library's allocator)"
        )
    return f"{asked}: {cause.split('.', 1)[1].replace('_', ' ')}"


def judge(state: MemoryState, source: str = "", context: Context | None = None) -> MemoryReport:
    """The findings over one device's allocator, in triage order, and the cause of its error where one is named."""
    findings = evaluate_all(rules_of("memory"), Evidence(state))
    findings = finish(findings, context or Context("memory"))
    named = [f for f in findings if f.id in CAUSES and f.severity == Severity.critical]
    cause = named[0].id if named else None
    notes = []
    if not state.stacks and state.allocated_bytes:
        notes.append(
            "the blocks carry no allocation stacks: the lines are those the history recorded, if any "
            "(torch.cuda.memory._record_memory_history() before the snapshot records them)"
        )
    elif state.unstacked_bytes:
        notes.append(
            f"{size(state.unstacked_bytes)} of the live bytes were allocated before their stacks were recorded"
        )
    return MemoryReport(
        source=source, state=state, cause=cause, summary=_summary(state, cause), findings=findings, notes=notes
    )


def judge_snapshot(
    snap: Snapshot,
    source: str = "",
    device: int | None = None,
    dump: MemoryDump | None = None,
    samples: list[tuple[float, float]] | None = None,
    processes: list[ProcessMemory] | None = None,
    context: Context | None = None,
) -> MemoryReport:
    return judge(analyze(snap, device, dump, samples, processes), source, context)


def named(processes: list[ProcessMemory] | None, owners: Mapping[int, ProcessOwner]) -> list[ProcessMemory] | None:
    """The processes a dump recorded, with their names and containers or pods where the run looked them up
    (`Recording.owners`)."""
    if processes is None:
        return None
    out = []
    for p in processes:
        o = owners.get(p.pid)
        if o is None:
            out.append(p)
            continue
        pod = o.container.label if o.container is not None and o.container.label != "-" else None
        out.append(msgspec.structs.replace(p, name=p.name or o.name, owner=p.owner or pod))
    return out


def memory_findings(
    dump: MemoryDump,
    processes: list[ProcessMemory] | None = None,
    samples: list[tuple[float, float]] | None = None,
    context: Context | None = None,
) -> MemoryReport | None:
    """What `run`'s judge calls for a snapshot its workload saved (`Recording.memory`): the report, its cause and
    findings (None where the file cannot be read: the run's own findings stand). `processes`: on the GPU at the error
    with their names and pods, where the run knows more of them than the dump; `samples`: (unix s, live bytes) of the
    allocator's counters over the run, a longer view of a growth than the recorded history."""
    try:
        snap = read(dump.snapshot)
    except SnapshotError:
        return None
    return judge_snapshot(snap, dump.snapshot, dump.device, dump, samples, processes, context)

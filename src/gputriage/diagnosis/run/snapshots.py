"""The allocator snapshots a Python workload saved under `run` or `monitor()` (`Recording.memory`), each judged once
by the memory judge (`diagnosis.memory.judge.memory_findings`) for the run's rules: the one of its first
out-of-memory error (`run.out_of_memory` names its cause), and the latest saved while its live memory grew
(`run.vram_growing` names the lines that hold the growth). Each is judged with the processes the run knows by name
and pod, and with the live bytes the allocator reported over the run after its start-up: a longer view of a growth
than the history the snapshot recorded."""

from __future__ import annotations

from dataclasses import dataclass

from gputriage.diagnosis.memory.judge import memory_findings, named
from gputriage.diagnosis.verify import Context
from gputriage.model.memory import MemoryDump, MemoryReport
from gputriage.model.recording import Recording
from gputriage.model.run import GpuVerdict, ProcessSummary


@dataclass(frozen=True)
class Judged:
    """One snapshot the workload saved and the memory judge's report on it (None: the file could not be read, the
    run's own findings stand); `gpu`: the sampled GPU it is of (NVML's index), where the run tells."""

    dump: MemoryDump
    report: MemoryReport | None
    gpu: int | None


def gpu_of(dump: MemoryDump, processes: list[ProcessSummary], gpus: list[int]) -> int | None:
    """The sampled GPU a snapshot is of: the one GPU its process held, else the one GPU the workload used, else the
    device the workload named where the sampler saw it (CUDA's numbering, which CUDA_VISIBLE_DEVICES may shift)."""
    held = sorted({p.gpu for p in processes if p.pid == dump.pid})
    if len(held) == 1:
        return held[0]
    if len(gpus) == 1:
        return gpus[0]
    return dump.device if dump.device is not None and dump.device in (held or gpus) else None


def live_samples(
    rec: Recording, verdict: GpuVerdict | None, gpu: int | None, until_s: float | None
) -> list[tuple[float, float]]:
    """(unix s, live bytes) the workload's allocator reported window by window after the start-up of the GPU
    (`verdict`), up to `until_s` (the snapshot's moment): the GPU's windows where the run tells which, else the
    host's."""
    started, ended = rec.started_s or 0.0, rec.ended_s or 0.0
    lo = started + (verdict.startup_s if verdict is not None else 0.0)
    hi = ended - (verdict.shutdown_s if verdict is not None else 0.0)
    if until_s is not None:
        hi = min(hi, until_s)
    windows = rec.windows.series.get(gpu, rec.windows.host) if gpu is not None else rec.windows.host
    return [
        ((w.t0_s + w.t1_s) / 2, w.allocator_allocated_bytes)
        for w in windows
        if w.allocator_allocated_bytes is not None and lo <= w.t0_s and w.t1_s <= hi
    ]


def judge_dump(
    rec: Recording,
    dump: MemoryDump,
    verdicts: dict[int, GpuVerdict],
    processes: list[ProcessSummary],
) -> Judged:
    gpu = gpu_of(dump, processes, list(verdicts) or rec.gpus)
    report = memory_findings(
        dump,
        processes=named(dump.processes, rec.owners),
        samples=live_samples(rec, verdicts.get(gpu) if gpu is not None else None, gpu, dump.t_s),
        context=Context(rec.kind, workload=rec.command, run_id=rec.run_id),
    )
    return Judged(dump, report, gpu)


def first_and_latest(kept: list[MemoryDump]) -> tuple[MemoryDump | None, MemoryDump | None]:
    """The snapshot of the first out-of-memory error, and the latest of a growth."""
    ooms = sorted((d for d in kept if d.kind == "oom"), key=lambda d: d.t_s or 0.0)
    grew = sorted((d for d in kept if d.kind == "growth"), key=lambda d: d.t_s or 0.0)
    return (ooms[0] if ooms else None), (grew[-1] if grew else None)


def judge_snapshots(
    rec: Recording, verdicts: dict[int, GpuVerdict], processes: list[ProcessSummary]
) -> tuple[Judged | None, Judged | None]:
    """The snapshot of the run's first out-of-memory error, and the latest of its growth, each judged (None: the
    workload saved none)."""
    oom, grew = first_and_latest(rec.memory)
    return (
        judge_dump(rec, oom, verdicts, processes) if oom is not None else None,
        judge_dump(rec, grew, verdicts, processes) if grew is not None else None,
    )


def kept_report(kept: list[MemoryDump], processes: list[ProcessSummary], context: Context) -> MemoryReport | None:
    """The memory report of a stored run judged before its snapshots were (`show`): the first out-of-memory error's
    snapshot kept beside the store, else the latest growth's, with the processes the run named."""
    owners = {p.pid: p.owner for p in processes if p.owner is not None}
    for dump in first_and_latest(kept):
        if dump is not None:
            report = memory_findings(dump, processes=named(dump.processes, owners), context=context)
            if report is not None:
                return report
    return None


def shown(oom: Judged | None, growth: Judged | None) -> MemoryReport | None:
    """The memory report the run's report carries: the out-of-memory error's, else the growth's."""
    for snap in (oom, growth):
        if snap is not None and snap.report is not None:
            return snap.report
    return None

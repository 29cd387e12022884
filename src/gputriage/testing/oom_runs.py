"""The five planted out-of-memory errors recorded on an H100 80GB under `gputriage run`
(`tests/fixtures/memory/h100/`, `benchmarks/record_oom.py`), as recordings the run judge reads again: what the memory
judge reads is as recorded (the allocator's snapshot the workload saved at the error, its marker, the processes the
sampler read then); the run's samples are rebuilt from the run's report of that time (`CASE.run.json.gz`: the run
store was not kept), one a second from each GPU's series, the medians of its figures, the processes seen, and the
allocator's counters as its `run.out_of_memory` finding quoted them at the end."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import msgspec

from gputriage.model.memory import MemoryDump
from gputriage.model.numbers import GIB, MIB
from gputriage.model.recording import Recording
from gputriage.model.run import GpuVerdict, ProcessSummary, RunReport
from gputriage.model.sample import GpuProcess, GpuSample, Sample, WorkloadSample
from gputriage.sampling.oom_marks import dump_of
from gputriage.sampling.session import replay
from gputriage.testing.recordings import load_runs, recorded

H100 = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "memory" / "h100"
# each case, the cause the memory judge must name and the line the example planted (`# planted`)
CASES = {
    "too_large": ("memory.request_too_large", "too_large.py:24"),
    "fragmented": ("memory.fragmented", "fragmented.py:35"),
    "growing": ("memory.growing", "growing.py:19"),
    "other_process": ("memory.other_process", "other_process.py:27"),
    "peak": ("memory.peak_near_capacity", "peak.py:24"),
}


def recorded_report(case: str, folder: Path = H100) -> RunReport:
    """The run's report as `gputriage run --json` printed it on the H100."""
    return msgspec.json.decode(gzip.decompress((folder / f"{case}.run.json.gz").read_bytes()), type=RunReport)


def oom_dump(case: str, folder: Path = H100) -> MemoryDump:
    """The snapshot the workload saved at the error, with its marker and the processes the sampler read."""
    dump = dump_of(folder / f"{case}.oom.json")
    if dump is None:
        raise FileNotFoundError(f"{folder}: no snapshot of {case}")
    return dump


def growth_dump(case: str, folder: Path = H100 / "growth") -> MemoryDump:
    """A snapshot the workload saved while its live memory grew, before the error."""
    dump = dump_of(folder / f"{case}.growth.json")
    if dump is None:
        raise FileNotFoundError(f"{folder}: no growth snapshot of {case}")
    return dump


def _gpu_sample(gpu: int, v: GpuVerdict, i: int, power_limit_mw: int | None) -> GpuSample:
    s, e = v.series, v.evidence

    def at(name: str) -> float | None:
        values = getattr(s, name, None) or []
        return values[i] if i < len(values) else None

    power = at("power_pct")
    clock = at("sm_clock_mhz")
    used = e.get("used_max_bytes")
    return GpuSample(
        index=gpu,
        util_pct=at("util_pct"),
        sm_active_pct=at("sm_active_pct"),
        tensor_active_pct=at("tensor_active_pct"),
        dram_active_pct=at("dram_active_pct"),
        sm_clock_mhz=int(clock) if clock is not None else None,
        power_mw=int(power / 100 * power_limit_mw) if power is not None and power_limit_mw else None,
        used_bytes=int(used) if used is not None else None,
        temperature_c=e.get("temperature_c"),
    )


def _seen(processes: list[ProcessSummary], t_s: float, job: bool) -> list[GpuProcess]:
    return [
        GpuProcess(gpu=p.gpu, pid=p.pid, used_bytes=p.used_max_bytes, sm_util_pct=p.sm_util_mean_pct)
        for p in processes
        if p.job == job and (p.first_s or 0.0) <= t_s <= (p.last_s or t_s)
    ]


def samples(report: RunReport) -> list[Sample]:
    """One sample a second of the run, from its report: the lead GPU's series and medians, the processes seen, and
    the allocator's counters its out-of-memory finding quoted, reported by the last two samples (the last window's)."""
    key, lead = next(iter(report.verdict.per_gpu.items()))
    started, ended = report.started_s or 0.0, report.ended_s or 0.0
    limit = report.meta.gpus[key].power_limit_mw if key in report.meta.gpus else None
    oom: dict[str, Any] = next((f.evidence for f in report.findings if f.id == "run.out_of_memory"), {})
    times = [started + t for t in lead.series.t_s] + [ended]
    out = []
    for i, t in enumerate(times):
        last = i >= len(times) - 2
        cpu = lead.series.workload_cpu_pct
        work = WorkloadSample(pids=1, cpu_pct=cpu[min(i, len(cpu) - 1)] if cpu else None)
        for rate, total in (("cuda_frees_per_s", "cuda_frees_total"), ("alloc_retries_per_s", "alloc_retries_total")):
            if lead.evidence.get(rate) is not None:  # the allocator reported: its median rate, kept up
                setattr(work, total, lead.evidence[rate] * (t - started))
        if last and oom:
            work.ooms_total = oom.get("ooms")
            work.oom_requested_bytes = oom["requested_mib"] * MIB if "requested_mib" in oom else None
            reserved = oom.get("allocator_reserved_max_gib")
            work.allocator_reserved_bytes = reserved * GIB if reserved is not None else None
        gpu = _gpu_sample(int(key), lead, min(i, len(lead.series.t_s) - 1), limit)
        out.append(
            Sample(
                t_s=t,
                gpus=[gpu],
                workload=work,
                neighbours=_seen(report.processes, t, job=False),
                job_processes=_seen(report.processes, t, job=True),
            )
        )
    return out


def recording(case: str, folder: Path = H100, growth: bool = False) -> tuple[Recording, int | None]:
    """The recorded run, with the snapshot its workload saved at the error (and, `growth`, the one saved while its
    memory grew, where there is one), and its exit code: its samples as the store kept them where they were cut
    from it (`CASE.run.samples.json.gz`, `benchmarks/record_oom.py`), else rebuilt from its report."""
    report = recorded_report(case, folder)
    kept = folder / f"{case}.run.samples.json.gz"
    if kept.exists():
        rec = recorded(load_runs(kept)[case])
        rec.run_id = report.id
    else:
        rec = replay(samples(report), report.meta, kind=report.kind, command=report.command, run_id=report.id)
    rec.owners = {p.pid: p.owner for p in report.processes if p.owner is not None}
    rec.memory = [oom_dump(case, folder)]
    if growth and (folder / "growth" / f"{case}.growth.json").exists():
        rec.memory.append(growth_dump(case, folder / "growth"))
    return rec, report.exit_code

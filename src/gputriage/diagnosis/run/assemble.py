"""A judged run as its report holds it: the host's figures over the run, what the report must say about itself, what
the run could not see, what its GPU time cost."""

from __future__ import annotations

from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.blind_spots import blind_spots
from gputriage.diagnosis.run.cost import cost, unpriced
from gputriage.diagnosis.run.snapshots import shown
from gputriage.model.finding import Finding
from gputriage.model.numbers import median
from gputriage.model.run import BlindSpot, HostSummary, RunReport
from gputriage.model.window import Windows


def report(ev: RunEvidence, findings: list[Finding], complete: bool = True) -> RunReport:
    """The run's report: its verdicts (stated), its findings (finished), and what else it measured."""
    rec = ev.rec
    return RunReport(
        id=rec.run_id,
        kind=rec.kind,
        command=rec.command,
        started_s=rec.started_s,
        ended_s=rec.ended_s,
        exit_code=ev.exit_code,
        complete=complete,
        samples=rec.windows.count,
        meta=rec.meta,
        verdict=ev.verdict,
        findings=findings,
        host=host_summary(ev.host),
        profile=ev.profile,
        notes=notes(ev),
        processes=ev.processes,
        blind_spots=unseen(ev),
        throughput=ev.throughput,
        cost=cost(
            {i: ev.series(i) for i in ev.verdicts},
            rec.static,
            ev.started_s,
            ev.ended_s,
            rec.meta.price_per_gpu_hour,
            rec.meta.currency,
        )
        if rec.gpus
        else None,
        compile=rec.compile,
        stacks=ev.stacks,
        ranks=ev.ranks.report if ev.ranks is not None else None,
        memory=shown(ev.oom_snapshot, ev.growth_snapshot),
        loader=ev.loader,
    )


def host_summary(host: Windows) -> HostSummary:
    """The host's figures over the run: medians, and the peaks of memory and swapping."""

    def med(name: str) -> float | None:
        xs = [x for x in host.column(name) if x is not None]
        return round(float(median(xs)), 1) if xs else None

    swap = [x for x in host.column("swap_in_max_pages_per_s") if x is not None]
    rss = [x for x in host.column("workload_rss_max_bytes") if x is not None]
    avail = [x for x in host.column("mem_available_min_bytes") if x is not None]
    return HostSummary(
        workload_rss_max_bytes=max(rss) if rss else None,
        mem_available_min_bytes=min(avail) if avail else None,
        workload_cpu_pct=med("workload_cpu_pct"),
        gpu_process_cpu_pct=med("gpu_process_cpu_pct"),
        write_mb_per_s=med("write_mb_per_s"),
        top_thread_pct=med("top_thread_pct"),
        max_core_pct=med("max_core_pct"),
        iowait_pct=med("iowait_pct"),
        read_mb_per_s=med("read_mb_per_s"),
        swap_in_max_pages_per_s=max(swap) if swap else None,
    )


def notes(ev: RunEvidence) -> list[str]:
    """What the report must say about itself: a store that failed, no GPU sampled (and so no cost at a price)."""
    rec = ev.rec
    out = [rec.store_error] if rec.store_error else []
    if not rec.gpus:
        sampled = "the host and the workload were" if rec.kind == "run" else "the host was"
        why = str(rec.meta.system.get("nvml", "NVML sees no GPU")).removeprefix("unavailable (").removesuffix(")")
        out.append(f"no GPU was sampled ({why}); only {sampled} sampled")  # not "(unavailable (no_driver: ...))"
        if rec.meta.price_per_gpu_hour is not None:
            out.append(unpriced(rec.meta.price_per_gpu_hour, rec.meta.currency))
    return out


def unseen(ev: RunEvidence) -> list[BlindSpot]:
    """The verdicts this run could not see (its GPUs' counters, no trace, its processes not sampled)."""
    if not ev.rec.gpus:
        return []
    trace = ev.profile.trace if ev.profile else None
    return blind_spots(
        {i: ev.static(i) for i in ev.verdicts},
        any(x is not None for x in ev.host.column("workload_cpu_pct")),
        traced=trace is not None and trace.verdict is not None,
        multi_gpu=len(ev.verdicts) > 1 or len({p.gpu for p in ev.processes if p.job}) > 1,
        allocator_reported=any(x is not None for x in ev.host.column("cuda_frees_per_s")),
    )

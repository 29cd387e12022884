"""The one judge of a monitored run (`run`, `watch`, `show`, `monitor()`): a recording (and, for
`run --profile`, the profiler's trace) in, a `RunReport` out — verdict per GPU, the merged verdict,
findings, budget violations."""

from __future__ import annotations

import msgspec

from gputriage.diagnosis.budget import Budget, check_windows
from gputriage.diagnosis.impact import with_impact
from gputriage.diagnosis.run.blind_spots import blind_spots
from gputriage.diagnosis.run.classify import computes
from gputriage.diagnosis.run.compile import EAGER_LOOKING, compile_findings, eager_fallback
from gputriage.diagnosis.run.cost import cost, unpriced
from gputriage.diagnosis.run.findings import (
    host_findings,
    idle_edges,
    job_process_findings,
    out_of_memory,
    verdict_finding,
)
from gputriage.diagnosis.run.host_stacks import annotate, annotate_regimes, run_stacks, steady_span, with_lines
from gputriage.diagnosis.run.idle_held import idle_held_findings
from gputriage.diagnosis.run.merge import merge
from gputriage.diagnosis.run.profiler_cost import place_windows, profiler_costs, regime_at
from gputriage.diagnosis.run.profiler_cost import profiler_effect as profiler_effect
from gputriage.diagnosis.run.regimes import lasts, regime_changes
from gputriage.diagnosis.run.throughput import throughput
from gputriage.diagnosis.run.verdict import gpu_verdict, holds_workload_memory
from gputriage.diagnosis.run.vram_growth import vram_growing
from gputriage.diagnosis.trace.findings import as_profiler_artefact
from gputriage.diagnosis.verify import Context, with_verify
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.finding import Finding, triage_order
from gputriage.model.numbers import median
from gputriage.model.recording import Recording
from gputriage.model.run import GpuStatic, GpuVerdict, HostSummary, ProfileReport, RunReport, RunVerdict
from gputriage.model.window import Windows

FAILED_EARLY_S = 10.0  # a command that fails this soon, before reporting a step, ran no more than its start-up
MIN_STEADY_S = 3.0  # a failed command whose GPU computed less than this after its start-up had no steady state


def workload_gpus(rec: Recording) -> list[int]:
    """GPUs the workload used: where activity rose or its memory grew; else the first."""
    used = []
    for i in rec.gpus:
        s = rec.windows.series[i]
        if not len(s):
            continue
        if any(
            computes(w.util_max_pct, w.sm_active_max_pct) or holds_workload_memory(w.used_max_bytes, s[0].used_bytes)
            for w in s
        ):
            used.append(i)
    return used or rec.gpus[:1]


def host_summary(host: Windows) -> HostSummary:
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


def dominant(verdicts: dict[int, GpuVerdict]) -> GpuVerdict | None:
    """The verdict most GPUs share."""
    named = [v for v in verdicts.values() if v.bottleneck is not None]
    if not named:
        return None
    names = [v.bottleneck for v in named]
    top = max(set(names), key=names.count)
    return next(v for v in named if v.bottleneck == top)


def failed_early(
    rec: Recording, exit_code: int | None, verdicts: dict[int, GpuVerdict], out_of_memory: bool = False
) -> float | None:
    """The seconds a command ran when it failed (exit 1-127, not a signal) within FAILED_EARLY_S before
    reporting a step through `gputriage.step()`, or out of GPU memory before reporting one, or less than
    MIN_STEADY_S after its start-up (a crash at its first steps): its windows hold a start-up, no steady
    state. Else None."""
    ran_s = (rec.ended_s or 0.0) - (rec.started_s or 0.0)
    if rec.kind != "run" or exit_code is None or not 0 < exit_code < 128:
        return None
    stepped = any((w.steps_total or 0.0) > 0 for w in rec.windows.host)
    steady_s = max((ran_s - v.startup_s - v.shutdown_s for v in verdicts.values()), default=0.0)
    if not stepped and (ran_s < FAILED_EARLY_S or out_of_memory):
        return ran_s
    return ran_s if steady_s < MIN_STEADY_S else None


def state(v: GpuVerdict, f: Finding | None, verdicts: dict[int, GpuVerdict], context: Context) -> None:
    """The verdict stated once, in the verdict: what its catalog entry's finding would have said (the link's
    capacity, causes left open), its severity, its estimated gain and how to verify the fix. It is not repeated
    among the findings."""
    if f is None:
        return
    f = with_verify(with_impact([f], verdicts), context)[0]
    v.finding, v.severity, v.impact, v.verify = f.id, f.severity, f.impact, f.verify
    if not v.undecided_between:  # (the causes left open are said beside the verdict, not in its words)
        v.summary, v.decision = f.cause, f.decision


def traced_regime(profile: ProfileReport, lead: GpuVerdict | None, rec: Recording) -> str | None:
    """The lasting regime (`regimes.lasts`) of the lead GPU's timeline the trace the verdict merges was taken in;
    None where it fell in a blip, the start-up or no regime."""
    used = [w for w in profile.windows if w.used] or (profile.windows if len(profile.windows) == 1 else [])
    at = (used[0].window_s or used[0].held_s) if used else profile.window_s
    if not at or lead is None or rec.started_s is None:
        return None
    r = regime_at(lead.timeline, (at[0] + at[1]) / 2 - rec.started_s, inside=True)
    return r.regime if r is not None and lasts(r, rec.windows.series[lead.gpu].window_s) else None


def judge(
    rec: Recording,
    exit_code: int | None = None,
    *,
    profile: ProfileReport | None = None,
    budget: Budget | None = None,
    complete: bool = True,
    metric: tuple[str, list[tuple[float, float]]] | None = None,
) -> RunReport:
    """`metric`: `run --metric`'s pattern and the (unix time, value) pairs it read in the workload's output."""
    workload = rec.kind == "run"
    static = rec.static
    held = (
        [tuple(h) for h in profile.held_all_s] or ([tuple(profile.held_s)] if profile.held_s else []) if profile else []
    )
    started, ended = rec.started_s or 0.0, rec.ended_s or 0.0
    verdicts = {
        i: gpu_verdict(
            rec.windows.series[i],
            static.get(i, GpuStatic()),
            started,
            ended,
            exclude_s=held,
            observed=rec.kind == "watch",
        )
        for i in workload_gpus(rec)
    }
    oom = out_of_memory(rec.windows.host) if workload else None
    early = failed_early(rec, exit_code, verdicts, out_of_memory=oom is not None)
    for v in verdicts.values() if early is not None else ():  # what ran is a start-up: no cause to name
        v.bottleneck, v.undecided_between, v.decision, v.share, v.confidence = None, [], "", 0.0, 0.0
        why = "out of GPU memory" if oom is not None else "its output says why"
        v.summary = (
            f"no verdict: the command failed (exit {exit_code}) after {early:.1f} s, before a steady state ({why})"
        )
    # the workload's Python threads, not while the profiler held them
    stacks = run_stacks(rec.windows, *steady_span(verdicts, started, ended), exclude_s=held)
    for v in verdicts.values():
        annotate(v, stacks)
        annotate_regimes(v, rec.windows, started, held)
    first = dominant(verdicts)
    verdict = RunVerdict(
        bottleneck=first.bottleneck if first else None,
        source="sampler",
        per_gpu={str(k): v for k, v in verdicts.items()},
    )
    findings: list[Finding] = []
    context = Context(rec.kind, workload=rec.command, run_id=rec.run_id)
    for i, v in verdicts.items():
        state(v, with_lines(verdict_finding(v, static.get(i, GpuStatic())), v), verdicts, context)
        if workload and early is None:
            edges = idle_edges(v, ended - started)
            if edges is not None:
                findings.append(edges)
        growing = (
            vram_growing(v, rec.windows.series[i], static.get(i, GpuStatic()), started, ended)
            if early is None
            else None
        )
        if growing is not None:
            findings.append(growing)
    findings += host_findings(rec.windows.host)
    findings += compile_findings(rec.compile)
    if oom is not None:
        findings.append(oom)
    processes = [
        msgspec.structs.replace(p, owner=rec.owners[p.pid]) if p.pid in rec.owners else p
        for p in rec.windows.processes()
    ]
    if workload:
        findings += job_process_findings(processes)
    findings += idle_held_findings(
        processes, static, rec.owners, rec.meta.price_per_gpu_hour, rec.meta.currency, rec.meta.idle_held_min_s
    )
    trace = profile.trace if profile else None
    lead = next(iter(verdicts.values()), None)
    if profile is not None and early is None:  # what the profiler cost each GPU; the regime of each window
        profile.effects = profiler_costs(rec, verdicts, profile, held)
        verdict.profiler_effect = profile.effects.get(str(lead.gpu)) if lead else None
        place_windows(profile, lead.timeline if lead else [], rec.started_s)
    if profile is not None and trace is not None and early is None:
        effect = verdict.profiler_effect
        merged = merge(lead, trace.verdict, effect, regime=traced_regime(profile, lead, rec))
        verdict.bottleneck, verdict.source, verdict.merged = merged.bottleneck, merged.source, merged
        trace_findings = list(trace.findings)
        if merged.profiler_starved:  # the trace's host-side idle is the profiler's own
            host_side = {f"trace.{b.value}" for b in HOST_BOUND}
            why = f"{merged.profiler_note}: this idle is its own overhead"
            trace_findings = [as_profiler_artefact(f, why) if f.id in host_side else f for f in trace_findings]
        findings += trace_findings
    fell_back = eager_fallback(rec.compile)
    looks = {verdict.bottleneck, *(v.bottleneck for v in verdicts.values())}
    for v in verdicts.values() if fell_back and looks & EAGER_LOOKING else ():  # a compiled model run eagerly
        v.decision = fell_back + v.decision
    if budget is not None:
        findings += check_windows(budget, rec.windows.series, rec.windows.host, static)
    notes = [rec.store_error] if rec.store_error else []
    if not rec.gpus:
        sampled = "the host and the workload were" if rec.kind == "run" else "the host was"
        why = str(rec.meta.system.get("nvml", "NVML sees no GPU")).removeprefix("unavailable (").removesuffix(")")
        notes.append(f"no GPU was sampled ({why}); only {sampled} sampled")  # not "(unavailable (no_driver: ...))"
        if rec.meta.price_per_gpu_hour is not None:
            notes.append(unpriced(rec.meta.price_per_gpu_hour, rec.meta.currency))
    used = list(verdicts)
    lead_verdict = verdicts[used[0]] if used else None
    done = throughput(
        rec.windows.host,
        lead_verdict.timeline if lead_verdict else [],
        started,
        [static.get(i, GpuStatic()) for i in used],
        rec.meta.flops_per_token,
        rec.meta.flops_per_step,
        metric,
    )
    if lead_verdict is not None and early is None:
        findings += regime_changes(
            lead_verdict.gpu,
            lead_verdict.timeline,
            rec.windows.series[used[0]].window_s,
            done,
            watched=rec.kind == "watch",
        )
    processes_seen = any(x is not None for x in rec.windows.host.column("workload_cpu_pct"))
    blind = (
        blind_spots(
            {i: static.get(i, GpuStatic()) for i in used},
            processes_seen,
            traced=trace is not None and trace.verdict is not None,
            multi_gpu=len(used) > 1 or len({p.gpu for p in processes if p.job}) > 1,
            allocator_reported=any(x is not None for x in rec.windows.host.column("cuda_frees_per_s")),
        )
        if rec.gpus
        else []
    )
    return RunReport(
        id=rec.run_id,
        kind=rec.kind,
        command=rec.command,
        started_s=rec.started_s,
        ended_s=rec.ended_s,
        exit_code=exit_code,
        complete=complete,
        samples=rec.windows.count,
        meta=rec.meta,
        verdict=verdict,
        findings=triage_order(with_verify(with_impact(findings), context)),
        host=host_summary(rec.windows.host),
        profile=profile,
        notes=notes,
        processes=processes,
        blind_spots=blind,
        throughput=done,
        cost=cost(
            {i: rec.windows.series[i] for i in used},
            static,
            started,
            ended,
            rec.meta.price_per_gpu_hour,
            rec.meta.currency,
        )
        if rec.gpus
        else None,
        compile=rec.compile,
        stacks=stacks,
    )

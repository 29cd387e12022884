"""The verdict stage of a monitored run, and the evidence its rules read (`base.RunEvidence`), gathered once: each GPU
the workload used judged over its steady state (`verdict.gpu_verdict`), the profiler's holds left out; no verdict for
a command that failed before a steady state; the Python lines each host-side verdict names; the trace's verdict
merged where the run was profiled; the processes on its GPUs with their owners; its throughput; the allocator
snapshots its workload saved, judged by the memory judge (`snapshots`); a distributed job's ranks side by side."""

from __future__ import annotations

import msgspec

from gputriage.diagnosis.run.base import RunEvidence
from gputriage.diagnosis.run.classify import computes
from gputriage.diagnosis.run.host_stacks import annotate, annotate_regimes, run_stacks, steady_span
from gputriage.diagnosis.run.loader import loader_workers
from gputriage.diagnosis.run.merge import merge
from gputriage.diagnosis.run.profiler_cost import place_windows, profiler_costs, regime_at
from gputriage.diagnosis.run.rank_causes import RanksEvidence, rank_gpus
from gputriage.diagnosis.run.rank_compare import compare
from gputriage.diagnosis.run.rank_compare import steady_span as ranks_steady
from gputriage.diagnosis.run.regimes import lasts
from gputriage.diagnosis.run.rules.out_of_memory import ooms_seen
from gputriage.diagnosis.run.snapshots import judge_snapshots
from gputriage.diagnosis.run.throughput import throughput
from gputriage.diagnosis.run.verdict import gpu_verdict, holds_workload_memory
from gputriage.diagnosis.trace.findings import as_profiler_artefact
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.finding import Finding, Threshold
from gputriage.model.ranks import RanksReport
from gputriage.model.recording import Recording
from gputriage.model.run import GpuStatic, GpuVerdict, ProcessSummary, ProfileReport, RunVerdict, failed_by_itself

FAILED_EARLY = Threshold(
    "failed_early_s",
    10.0,
    "s",
    "how soon a command that failed (exit 1-127), having reported no step through `gputriage.step()`, failed "
    "within its start-up: its windows hold a start-up, no steady state, and get no verdict",
    "H200 recordings (tests/fixtures/h200/runs_unseen4.json.gz): fp8_crashed_gpm and scatter_crashed_nogpm failed "
    "after 3-4 s (a wrong keyword to gputriage.step()), read as idle and input_starved before; judgement for 10 s, a "
    "start-up's imports, CUDA context and model",
)
MIN_STEADY = Threshold(
    "failed_min_steady_s",
    3.0,
    "s",
    "GPU time after its start-up (and before its shut-down) under which a failed command had no steady state",
    "H200 recording tests/fixtures/h200/runs_unseen5.json.gz: near_full_retries' first version ran out of GPU memory "
    "at its second step; judgement: three 1 s windows, the fewest a median is taken over",
)


def gather(
    rec: Recording,
    exit_code: int | None = None,
    profile: ProfileReport | None = None,
    metric: tuple[str, list[tuple[float, float]]] | None = None,
) -> RunEvidence:
    """The run's evidence, its GPUs judged (`metric`: `run --metric`'s pattern and the (unix time, value) pairs it
    read in the workload's output)."""
    held = held_spans(profile)
    started, ended = rec.started_s or 0.0, rec.ended_s or 0.0
    verdicts = {
        i: gpu_verdict(
            rec.windows.series[i], rec.static.get(i, GpuStatic()), started, ended, held, observed=rec.kind == "watch"
        )
        for i in workload_gpus(rec)
    }
    early = failed_early(rec, exit_code, verdicts)
    if early is not None:  # what ran is a start-up: no cause to name
        for v in verdicts.values():
            no_verdict(v, rec, exit_code, early)
    stacks = run_stacks(rec.windows, *steady_span(verdicts, started, ended), exclude_s=held)  # not while profiled
    for v in verdicts.values():
        annotate(v, stacks)
        annotate_regimes(v, rec.windows, started, held)
    first = dominant(verdicts)
    verdict = RunVerdict(
        bottleneck=first.bottleneck if first else None,
        source="sampler",
        per_gpu={str(k): v for k, v in verdicts.items()},
    )
    ev = RunEvidence(rec, exit_code, verdicts, verdict, early, profile, held, stacks, with_owners(rec))
    lead = ev.lead
    ev.throughput = throughput(
        rec.windows.host,
        lead.timeline if lead else [],
        started,
        [ev.static(i) for i in verdicts],
        rec.meta.flops_per_token,
        rec.meta.flops_per_step,
        metric,
    )
    ev.loader = loader_workers(rec.windows.host)
    if profile is not None and ev.steady:
        ev.trace_findings = merged(ev, profile)
    ev.ranks = ranks_of(rec)
    ev.oom_snapshot, ev.growth_snapshot = judge_snapshots(rec, verdicts, ev.processes)
    return ev


def ranks_of(rec: Recording) -> RanksEvidence | None:
    """A distributed job's ranks compared over their steady span, each with its GPU's figures; None for no ranks."""
    if not rec.ranks:  # a watch may have seen a hang of ranks it did not sample
        return RanksEvidence(RanksReport(nodes=[rec.meta.hostname], hangs=rec.hangs)) if rec.hangs else None
    span = ranks_steady(rec.ranks)
    gpus = rank_gpus({s.rank: s.gpu for s in rec.ranks}, rec.windows.series, rec.static, span[0] if span else 0.0)
    report = compare(rec.ranks, gpus, rec.hangs)
    return RanksEvidence(report) if report is not None else None


def held_spans(profile: ProfileReport | None) -> list[tuple[float, float]]:
    """When the profiler held the workload (unix s): each window's hold, else the one."""
    if profile is None:
        return []
    return [(h[0], h[1]) for h in profile.held_all_s] or (
        [(profile.held_s[0], profile.held_s[1])] if profile.held_s else []
    )


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


def failed_early(rec: Recording, exit_code: int | None, verdicts: dict[int, GpuVerdict]) -> float | None:
    """The seconds a command ran when it failed (exit 1-127, not a signal) within FAILED_EARLY before reporting a step
    through `gputriage.step()`, or out of GPU memory before reporting one, or less than MIN_STEADY after its start-up
    (a crash at its first steps): its windows hold a start-up, no steady state. Else None."""
    if rec.kind != "run" or not failed_by_itself(exit_code):
        return None
    ran_s = (rec.ended_s or 0.0) - (rec.started_s or 0.0)
    stepped = any((w.steps_total or 0.0) > 0 for w in rec.windows.host)
    steady_s = max((ran_s - v.startup_s - v.shutdown_s for v in verdicts.values()), default=0.0)
    if not stepped and (ran_s < FAILED_EARLY.value or ooms_seen(rec) >= 1):
        return ran_s
    return ran_s if steady_s < MIN_STEADY.value else None


def no_verdict(v: GpuVerdict, rec: Recording, exit_code: int | None, ran_s: float) -> None:
    """A GPU of a command that failed before a steady state: no cause named, and why."""
    v.bottleneck, v.undecided_between, v.decision, v.share, v.confidence = None, [], "", 0.0, 0.0
    why = "out of GPU memory" if ooms_seen(rec) >= 1 else "its output says why"
    v.summary = f"no verdict: the command failed (exit {exit_code}) after {ran_s:.1f} s, before a steady state ({why})"


def dominant(verdicts: dict[int, GpuVerdict]) -> GpuVerdict | None:
    """The verdict most GPUs share."""
    named = [v for v in verdicts.values() if v.bottleneck is not None]
    if not named:
        return None
    names = [v.bottleneck for v in named]
    top = max(set(names), key=names.count)
    return next(v for v in named if v.bottleneck == top)


def with_owners(rec: Recording) -> list[ProcessSummary]:
    """Every process seen on a sampled GPU, with who it is where the recording knows."""
    return [
        msgspec.structs.replace(p, owner=rec.owners[p.pid]) if p.pid in rec.owners else p
        for p in rec.windows.processes()
    ]


def merged(ev: RunEvidence, profile: ProfileReport) -> list[Finding]:
    """What the profiler cost each GPU and the regime of each window it took; the trace's verdict merged with the
    sampler's (`merge`); the trace's findings, its host-side idle said to be the profiler's own where it starved the
    workload."""
    lead = ev.lead
    profile.effects = profiler_costs(ev.rec, ev.verdicts, profile, ev.held_s)
    ev.verdict.profiler_effect = profile.effects.get(str(lead.gpu)) if lead else None
    place_windows(profile, lead.timeline if lead else [], ev.rec.started_s)
    trace = profile.trace
    if trace is None:
        return []
    m = merge(lead, trace.verdict, ev.verdict.profiler_effect, regime=traced_regime(profile, lead, ev.rec))
    ev.verdict.bottleneck, ev.verdict.source, ev.verdict.merged = m.bottleneck, m.source, m
    if not m.profiler_starved:
        return list(trace.findings)
    host_side = {f"trace.{b.value}" for b in HOST_BOUND}  # the trace's host-side idle is the profiler's own
    why = f"{m.profiler_note}: this idle is its own overhead"
    return [as_profiler_artefact(f, why) if f.id in host_side else f for f in trace.findings]


def traced_regime(profile: ProfileReport, lead: GpuVerdict | None, rec: Recording) -> str | None:
    """The lasting regime (`regimes.lasts`) of the lead GPU's timeline the trace the verdict merges was taken in;
    None where it fell in a blip, the start-up or no regime."""
    used = [w for w in profile.windows if w.used] or (profile.windows if len(profile.windows) == 1 else [])
    at = (used[0].window_s or used[0].held_s) if used else profile.window_s
    if not at or lead is None or rec.started_s is None:
        return None
    r = regime_at(lead.timeline, (at[0] + at[1]) / 2 - rec.started_s, inside=True)
    return r.regime if r is not None and lasts(r, rec.windows.series[lead.gpu].window_s) else None

"""Where a Python workload's threads spent a run's steady state, from the stack sampler in its processes
(`inworkload.stack_sampler`, read by `sampling.progress`): the main thread's time per category and the lines the
time went to (`run_stacks`); the lines each host-side verdict names, and its summary said from the main thread's
time where the stacks decided it (`annotate`); a main thread waiting for input from outside the process, with
nothing busy beside it: the input rate sets the pace (`run.input_rate_bound`)."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

import msgspec

from gputriage.diagnosis.bottlenecks import INPUT_WORKERS_DECISION
from gputriage.diagnosis.run.findings import INPUT_RATE_BOUND
from gputriage.diagnosis.run.host_side import (
    INPUT_READ,
    OTHERS_BUSY,
    stack_shares,
    stacks_say,
    waits_for_input,
    waits_on_loader,
)
from gputriage.diagnosis.thresholds import IOWAIT
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Finding
from gputriage.model.recording import WindowedRun
from gputriage.model.run import GpuVerdict, HostLine, HostStacks
from gputriage.model.sample import StackCounts
from gputriage.sampling.progress import main_shares, others_busy

TOP_LINES = 10  # lines a run's report keeps
SPARE_START_S = 5.0  # a steady span this long loses nothing by starting at the first counts inside it
VERDICT_LINES = 5  # lines a host-side verdict names
MIN_LINE_SHARE = 0.005  # lines under half a percent of the steady time are left out
WAITS = ("input_wait", "gpu_wait")  # categories in which a thread sleeps
STDLIB_FILE = re.compile(r"/lib(?:64)?/python\d\.\d+/|/Lib/")  # the standard library: posix, Windows
NAMES_LINES = HOST_BOUND | {B.h2d_copy_bound}  # verdicts that name the workload's lines
DOING = {
    "gpu_wait": "waits on the GPU",
    "input_wait": "waits for input",
    "copy": "copies",
    "host_compute": "computes on the host",
    "compile": "compiles",
    "gc": "collects garbage",
    "launch": "runs torch ops (launching)",
}
COMPILE_DECISION = (
    "torch.compile compiles while the GPU waits: find why it compiles again (TORCH_LOGS=recompiles,graph_breaks), "
    "mark changing sizes dynamic (torch._dynamo.mark_dynamic) or pad them to a few shapes, and keep the compiled "
    "code's cache between runs (TORCHINDUCTOR_CACHE_DIR)"
)
GC_DECISION = (
    "Garbage collection holds the interpreter while the GPU waits: gc.freeze() after building the model and data, "
    "fewer short-lived Python objects in the loop (tensors, not lists of floats), or gc.disable() with a "
    "gc.collect() every N steps"
)


def steady_span(verdicts: Mapping[int, GpuVerdict], started: float, ended: float) -> tuple[float, float]:
    """The steady state of the lead GPU's verdict (unix s), after its warm-up (the optimizer built, dynamo
    imported, the first steps); the whole run where no GPU was judged."""
    lead = next(iter(verdicts.values()), None)
    if lead is None:
        return started, ended
    warm = [r.end_s for r in lead.timeline if r.regime == "warm-up"]
    return started + max([lead.startup_s, *warm]), ended - lead.shutdown_s


def _at(snapshots: list[tuple[float, StackCounts]], t: float) -> StackCounts | None:
    """The last counts taken at or before `t`."""
    out = None
    for when, counts in snapshots:
        if when > t:
            break
        out = counts
    return out


def run_stacks(run: WindowedRun, t0: float, t1: float, exclude_s: Sequence[Sequence[float]] = ()) -> HostStacks | None:
    """The main thread's time per category and the top lines from `t0` to `t1` (unix s): the counts carried
    nearest before `t1` less those carried first at or after `t0` where the span has SPARE_START_S to spare (the
    second of start-up before the first step is not the loop's), else nearest `t0`; less, for each span of
    `exclude_s` inside (the profiler holding the workload), the counts carried over it: the profiler's, not the
    workload's."""
    snapshots = run.stack_snapshots()
    if not snapshots:
        return None
    end = _at(snapshots, t1) or snapshots[-1][1]
    after = next(((when, c) for when, c in snapshots if when >= t0 and c.ticks < end.ticks), None)
    before = next(((when, c) for when, c in reversed(snapshots) if when <= t0), None)
    nearer = before is not None and after is not None and after[0] - t0 < t0 - before[0]
    start = before[1] if before is not None else None
    if after is not None and (t1 - t0 >= SPARE_START_S or nearer):
        start = after[1]
    if start is end or (start is not None and end.ticks - start.ticks <= 0):
        start = None
    span = _minus(end, start)
    for a, b in exclude_s:
        hi, lo = _at(snapshots, min(b, t1)), _at(snapshots, max(a, t0))
        if start is not None and (lo is None or lo.ticks < start.ticks):
            lo = start
        if hi is not None and hi.ticks <= end.ticks and (lo is None or hi.ticks > lo.ticks):
            span = _minus(span, _minus(hi, lo))
    ticks, main, every, cpu, wall = span.ticks, span.main, span.all, span.main_cpu_s, span.wall_s
    shares = main_shares(main, ticks, cpu, wall)
    if not shares or ticks <= 0:
        return None
    seen = sum(max(0.0, main.get(c, 0.0)) for c in DOING)
    return HostStacks(
        span_s=round(wall, 1),
        samples=round(ticks),
        main_shares={c: round(shares[c], 3) for c in DOING},
        main_cpu_pct=round(100.0 * cpu / wall, 1) if cpu is not None and wall > 0 else None,
        others_busy=_rounded(others_busy(main, every, ticks)),
        lines=_lines(span, shares, seen, ticks),
    )


def _minus(a: StackCounts, b: StackCounts | None) -> StackCounts:
    """`a` less `b` (counts are cumulative: the difference is what the span between them saw), category by
    category and for each of `a`'s lines."""
    if b is None:
        return a
    before = {(x.file, x.line, x.function, x.category): x for x in b.lines or []}
    lines = []
    for x in a.lines or []:
        y = before.get((x.file, x.line, x.function, x.category))
        lines.append(msgspec.structs.replace(x, main=x.main - y.main, all=x.all - y.all) if y else x)
    return StackCounts(
        ticks=a.ticks - b.ticks,
        main={k: v - b.main.get(k, 0.0) for k, v in a.main.items()},
        all={k: v - b.all.get(k, 0.0) for k, v in a.all.items()},
        main_cpu_s=a.main_cpu_s - b.main_cpu_s if a.main_cpu_s is not None and b.main_cpu_s is not None else None,
        wall_s=a.wall_s - b.wall_s,
        lines=lines,
    )


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _lines(span: StackCounts, shares: dict[str, float], seen: float, ticks: float) -> list[HostLine]:
    """Each line's share of the steady time: the main thread's samples there, corrected as its category's share was
    (its waits capped at its time off the CPU), and other threads' (a thread-second a second each), but not a
    library's own threads parked in a wait (a DataLoader's pin-memory thread, idle pools): they cost nothing, where
    a thread of the workload's own code that waits (a producer's sleep) sets its pace."""
    observed = dict.fromkeys(DOING, 0.0)
    rows = []
    for x in span.lines or []:
        main, other = max(0.0, x.main), max(0.0, x.all - x.main)
        rows.append((x, main, other))
        observed[x.category] = observed.get(x.category, 0.0) + main
    out = []
    for x, main, other in rows:
        seen_share = main / seen if seen > 0 else 0.0
        category_seen = observed.get(x.category, 0.0) / seen if seen > 0 else 0.0
        factor = shares.get(x.category, 0.0) / category_seen if category_seen > 0 else 1.0
        share = seen_share * factor + other / ticks
        if main < other and x.category in WAITS and not (x.own if x.own is not None else own_code(x.file)):
            continue
        if share >= MIN_LINE_SHARE:
            out.append(
                HostLine(
                    file=x.file,
                    line=x.line,
                    function=x.function,
                    category=x.category,
                    share=round(share, 3),
                    main=main >= other,
                )
            )
    waits = [x for x in out if x.main and x.category == "input_wait"]
    for c in DOING:  # CPU time between waits that no sample caught: the function that waited, its line unknown
        missing = shares.get(c, 0.0) - (observed.get(c, 0.0) / seen if seen > 0 else 0.0)
        if c != "input_wait" and observed.get(c, 0.0) == 0 and missing >= MIN_LINE_SHARE and waits:
            w = waits[0]
            out.append(
                HostLine(
                    file=w.file, line=w.line, function=w.function, category=c, share=round(missing, 3), inferred=True
                )
            )
    return sorted(out, key=lambda x: -x.share)[:TOP_LINES]


def own_code(path: str) -> bool:
    """A line of the workload's own code, judged from its path where the sampler did not say (a recording made
    before it did): outside the standard library and installed packages (the sampler names a library's frame only
    for a thread that runs none of the workload's)."""
    p = path.replace("\\", "/")
    return not (p.startswith("<frozen") or "-packages/" in p or STDLIB_FILE.search(p))


def rate_bound(evidence: Mapping[str, float]) -> bool:
    """The main thread waited for input from outside the process most of the time (no DataLoader), nothing of the
    workload busy beside it, little read, no iowait: the input rate sets the pace."""
    shares = stack_shares(evidence)
    if shares is None:
        return False
    return (
        waits_for_input(shares)
        and not waits_on_loader(
            shares["input_wait"],
            evidence.get("host_input_loader_share"),
            evidence.get("workload_cpu_pct"),
            evidence.get("gpu_process_cpu_pct"),
        )
        and (evidence.get("host_others_busy") or 0.0) < OTHERS_BUSY.value
        and (evidence.get("read_mb_per_s") or 0.0) < INPUT_READ.value
        and (evidence.get("iowait_pct") or 0.0) < IOWAIT.value
    )


def annotate(v: GpuVerdict, stacks: HostStacks | None) -> None:
    """A host-side verdict names the lines the steady time went to; where the main thread's time decided it, its
    summary says what that thread did, and its decision follows (the input rate, compiling, garbage collection)."""
    if stacks is None or v.bottleneck not in NAMES_LINES:
        return
    v.lines = stacks.lines[:VERDICT_LINES]
    shares = stack_shares(v.evidence)
    if shares is None or not stacks_say(shares, v.bottleneck, v.evidence.get("util_pct")):
        return  # the CPU's figures decided it (a busy thread beside the main one, no stack samples)
    util = v.evidence.get("util_pct")
    doing = ", ".join(f"{DOING[c]} {s:.0%}" for c, s in sorted(shares.items(), key=lambda kv: -kv[1]) if s >= 0.1)
    at = main_line(v.lines)
    where = f" ({most_at(at)})" if at else ""
    gpu = f"GPU-Util {util:.0f}% while" if util is not None else "While"
    v.summary = f"{gpu} the main thread {doing or 'is seen'}{where}: {v.bottleneck.value}"
    top = max(shares, key=lambda c: shares[c])
    if v.bottleneck == B.input_starved and rate_bound(v.evidence):
        free = (
            f"the GPU has {100 - util:.0f}% headroom (GPU-Util {util:.0f}%)"
            if util is not None
            else "the GPU has headroom"
        )
        v.summary = (
            f"{gpu} the main thread waits for input from outside the process {shares['input_wait']:.0%} of "
            f"the time{where}, nothing busy beside it: the input rate is the limit"
        )
        v.decision = (
            f"The input rate is the limit: {free}: batch requests (answer several per step), share the "
            "GPU (several models or jobs on it: MPS, MIG), or use a smaller one"
        )
    elif (
        v.bottleneck == B.input_starved
        and top == "input_wait"
        and waits_on_loader(
            shares["input_wait"],
            v.evidence.get("host_input_loader_share"),
            v.evidence.get("workload_cpu_pct"),
            v.evidence.get("gpu_process_cpu_pct"),
        )
    ):
        v.decision = INPUT_WORKERS_DECISION
    elif top == "compile":
        v.decision = COMPILE_DECISION
    elif top == "gc":
        v.decision = GC_DECISION


def annotate_regimes(
    v: GpuVerdict, run: WindowedRun, started_s: float, exclude_s: Sequence[Sequence[float]] = ()
) -> None:
    """Each host-side regime of a run of several names where the main thread spent it: its top category and line
    (a slow shard names the function that decodes it, while the run as a whole names its busy regimes' lines)."""
    body = [r for r in v.timeline if r.summary]
    named = {b.value for b in NAMES_LINES}
    for r in body if len(body) >= 2 else ():
        stacks = run_stacks(run, started_s + r.start_s, started_s + r.end_s, exclude_s) if r.regime in named else None
        at = main_line(stacks.lines) if stacks else None
        if stacks is not None and at is not None:
            share = stacks.main_shares[at.category]
            r.summary += f"; the main thread {DOING[at.category]} {share:.0%} of it ({most_at(at)})"


def main_line(lines: list[HostLine]) -> HostLine | None:
    """The main thread's first line that a sample caught."""
    return next((x for x in lines if x.main and not x.inferred), None)


def most_at(x: HostLine) -> str:
    """ "most at loop.py:18 in batch, 62%"."""
    return f"most at {x.file.rsplit('/', 1)[-1]}:{x.line} in {x.function}, {x.share:.0%}"


def with_lines(f: Finding | None, v: GpuVerdict) -> Finding | None:
    """A verdict's finding with the lines it names in its evidence; input_starved at the input rate is
    `run.input_rate_bound`."""
    if f is None:
        return None
    evidence = dict(f.evidence)
    if v.lines:
        evidence["top_lines"] = [msgspec.to_builtins(x) for x in v.lines]
    if v.bottleneck == B.input_starved and rate_bound(v.evidence):
        return INPUT_RATE_BOUND.finding(
            evidence,
            subject=f.subject,
            severity=f.severity,
            symptom=f"GPU {v.gpu}: the input rate is the limit ({v.share:.0%} of steady time)",
            cause=f.cause,
            decision=f.decision,
        )
    return msgspec.structs.replace(f, evidence=evidence) if v.lines else f

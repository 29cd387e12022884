"""Where a Python workload's threads spent a run's steady state, from the stack sampler in its processes
(`inworkload.stack_sampler`, read by `sampling.progress`): the main thread's time per category and the lines the
time went to (`run_stacks`); the lines each host-side verdict names, and its summary said from the main thread's
time where the stacks decided it (`annotate`; an input_starved GPU that waits at its input's pace is worded by
the rule `run.input_rate_bound`)."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

import msgspec

from gputriage.diagnosis.bottlenecks import INPUT_WORKERS_DECISION
from gputriage.diagnosis.run.host_side import (
    stack_shares,
    stacks_say,
    waits_on_loader,
)
from gputriage.inworkload.stack_categories import CATEGORIES, COMPILE, DOING, GC, INPUT_WAIT, LOADER_FIELD, WAITS
from gputriage.model.bottleneck import HOST_BOUND
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold
from gputriage.model.recording import WindowedRun
from gputriage.model.run import GpuVerdict, HostLine, HostStacks
from gputriage.model.sample import StackCounts
from gputriage.sampling.progress import main_shares, others_busy

STACKS = "the host-side recordings of an H200 (tests/fixtures/h200/runs_host_side_modes.json.gz)"
TOP_LINES = Threshold(
    "stack_lines_kept",
    10.0,
    "lines",
    "the workload's Python lines a run's report keeps, most time first",
    f"judgement: the recorded loops' steady time goes to 2-6 lines ({STACKS})",
)
VERDICT_LINES = Threshold(
    "verdict_lines_named", 5.0, "lines", "lines a host-side verdict names", f"judgement, as {TOP_LINES.name}"
)
MIN_LINE_SHARE = Threshold(
    "stack_line_min_share",
    0.005,
    "share of the steady time",
    "a line's share of the steady time under which it is left out of the report",
    "judgement: at the sampler's 50 samples a second, a line seen in a few samples of a 10 s steady state",
)
SAID_SHARE = Threshold(
    "stack_said_min_share",
    0.1,
    "share of the main thread's time",
    "a category's share of the main thread's time from which a host-side verdict's summary says it",
    "judgement: the categories that make a tenth of the time or more",
)
SPARE_START = Threshold(
    "stack_spare_start_s",
    5.0,
    "s",
    "steady span long enough to start at the first stack counts inside it (the second of start-up before the first "
    "step is not the loop's) rather than at the counts nearest its start",
    "the list_batches recordings (tests/fixtures/h200/runs_host_side_modes.json.gz): the optimizer's construction "
    "imported dynamo for seconds before the first step, read as compiling, in an 8-14 s steady state",
)
STDLIB_FILE = re.compile(r"/lib(?:64)?/python\d\.\d+/|/Lib/")  # the standard library: posix, Windows
NAMES_LINES = HOST_BOUND | {B.h2d_copy_bound}  # verdicts that name the workload's lines
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
    nearest before `t1` less those carried first at or after `t0` where the span has SPARE_START to spare (the
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
    if after is not None and (t1 - t0 >= SPARE_START.value or nearer):
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
    seen = sum(max(0.0, main.get(c, 0.0)) for c in CATEGORIES)
    return HostStacks(
        span_s=round(wall, 1),
        samples=round(ticks),
        main_shares={c: round(shares[c], 3) for c in CATEGORIES},
        main_cpu_pct=round(100.0 * cpu / wall, 1) if cpu is not None and wall > 0 else None,
        others_busy=_rounded(others_busy(main, every, ticks)),
        lines=_lines(span, shares, seen, ticks),
        libraries=end.libraries or next((c.libraries for _, c in reversed(snapshots) if c.libraries), {}),
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
    observed = dict.fromkeys(CATEGORIES, 0.0)
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
        if share >= MIN_LINE_SHARE.value:
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
    waits = [x for x in out if x.main and x.category == INPUT_WAIT]
    for c in CATEGORIES:  # CPU time between waits that no sample caught: the function that waited, its line unknown
        missing = shares.get(c, 0.0) - (observed.get(c, 0.0) / seen if seen > 0 else 0.0)
        if c != INPUT_WAIT and observed.get(c, 0.0) == 0 and missing >= MIN_LINE_SHARE.value and waits:
            w = waits[0]
            out.append(
                HostLine(
                    file=w.file, line=w.line, function=w.function, category=c, share=round(missing, 3), inferred=True
                )
            )
    return sorted(out, key=lambda x: -x.share)[: int(TOP_LINES.value)]


def own_code(path: str) -> bool:
    """A line of the workload's own code, judged from its path where the sampler did not say (a recording made
    before it did): outside the standard library and installed packages (the sampler names a library's frame only
    for a thread that runs none of the workload's)."""
    p = path.replace("\\", "/")
    return not (p.startswith("<frozen") or "-packages/" in p or STDLIB_FILE.search(p))


def annotate(v: GpuVerdict, stacks: HostStacks | None) -> None:
    """A host-side verdict names the lines the steady time went to; where the main thread's time decided it, its
    summary says what that thread did, and its decision follows (the input rate, compiling, garbage collection)."""
    if stacks is None or v.bottleneck not in NAMES_LINES:
        return
    v.lines = stacks.lines[: int(VERDICT_LINES.value)]
    shares = stack_shares(v.evidence)
    if shares is None or not stacks_say(shares, v.bottleneck, v.evidence.get("util_pct")):
        return  # the CPU's figures decided it (a busy thread beside the main one, no stack samples)
    util = v.evidence.get("util_pct")
    said = sorted(((c, s) for c, s in shares.items() if s >= SAID_SHARE.value), key=lambda kv: -kv[1])
    doing = ", ".join(f"{DOING[c]} {s:.0%}" for c, s in said)
    at = main_line(v.lines)
    where = f" ({most_at(at)})" if at else ""
    gpu = f"GPU-Util {util:.0f}% while" if util is not None else "While"
    v.summary = f"{gpu} the main thread {doing or 'is seen'}{where}: {v.bottleneck.value}"
    top = max(shares, key=lambda c: shares[c])
    if (
        v.bottleneck == B.input_starved
        and top == INPUT_WAIT
        and waits_on_loader(
            shares[INPUT_WAIT],
            v.evidence.get(LOADER_FIELD),
            v.evidence.get("workload_cpu_pct"),
            v.evidence.get("gpu_process_cpu_pct"),
        )
    ):
        v.decision = INPUT_WORKERS_DECISION
    elif top == COMPILE:
        v.decision = COMPILE_DECISION
    elif top == GC:
        v.decision = GC_DECISION


def annotate_regimes(
    v: GpuVerdict, run: WindowedRun, started_s: float, exclude_s: Sequence[Sequence[float]] = ()
) -> None:
    """Each host-side regime of a run of several names where the main thread spent it: its top category and line
    (a slow shard names the function that decodes it, while the run as a whole names its busy regimes' lines)."""
    body = [r for r in v.timeline if r.summary]
    named = {b.value for b in NAMES_LINES}
    for r in body if len(body) > 1 else ():
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

"""The ranks of a distributed job under `run`: each rank as the sampler reads it (`model.sample.RankSample`, from
the stack sampler in its process, `inworkload.rank_clock`), its windows (`RankWindow`), the job's ranks side by side
in the report (`RanksReport`: a row per rank, the straggler the others wait for, the hangs seen), a hang as it was
said while the job ran (`model.sample.HangEvent`). The vocabulary is the trace report's (`model.trace`: `rank`,
`median_step_us`, `stragglers`)."""

from __future__ import annotations

from typing import Optional

import msgspec

from gputriage.model.finding import Finding
from gputriage.model.sample import HangEvent, StackCounts


class RankLine(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A line of a rank's own code and the share of its main thread's time there, doing what."""

    file: str
    line: int
    function: str
    category: str
    share: float


class RankWindow(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One rank over one window: its main thread's time by category (the stack sampler's, with "loader" and
    "runq": waiting for a CPU), its steps and their durations."""

    t0_s: float
    t1_s: float
    samples: float = 0.0  # the main thread's stack samples
    shares: dict[str, float] = {}
    steps: Optional[float] = None
    step_hist: dict[str, float] = {}  # steps per duration bin in the window
    cpu_pct: Optional[float] = None  # its process, % of one core


def merge_windows(a: RankWindow, b: RankWindow) -> RankWindow:
    """Two neighbouring windows as one (shares weighted by samples, CPU by time)."""
    n = a.samples + b.samples
    shares = {
        k: (a.shares.get(k, 0.0) * a.samples + b.shares.get(k, 0.0) * b.samples) / n if n else 0.0
        for k in a.shares.keys() | b.shares.keys()
    }
    da, db = a.t1_s - a.t0_s, b.t1_s - b.t0_s
    cpu = None
    if a.cpu_pct is not None and b.cpu_pct is not None and da + db > 0:
        cpu = (a.cpu_pct * da + b.cpu_pct * db) / (da + db)
    hist = dict(a.step_hist)
    for k, v in b.step_hist.items():
        hist[k] = hist.get(k, 0.0) + v
    steps = None if a.steps is None and b.steps is None else (a.steps or 0.0) + (b.steps or 0.0)
    return RankWindow(t0_s=a.t0_s, t1_s=b.t1_s, samples=n, shares=shares, steps=steps, step_hist=hist, cpu_pct=cpu)


class RankSeries(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One rank over the run, as the judge reads it: who, where, and its windows."""

    rank: int
    pid: int
    node: str = ""
    local_rank: Optional[int] = None
    world_size: Optional[int] = None
    job_id: Optional[str] = None
    gpu: Optional[int] = None  # the GPU its process held a context on
    step_source: Optional[str] = None
    cores: Optional[str] = None
    lines: list[RankLine] = []  # its main thread's top lines over its steady state (a report's series)
    windows: list[RankWindow] = []
    snapshots: list[tuple[float, StackCounts]] = []  # (unix s, its stack counts with their top lines), oldest first


class RankGpu(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A rank's GPU over the steady state: medians of its windows, its clock-event reasons, its link."""

    index: int
    name: Optional[str] = None
    sm_active_pct: Optional[float] = None
    util_pct: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    throttled_share: Optional[float] = None  # of samples with a thermal or hardware slowdown
    power_capped_share: Optional[float] = None
    pcie_gen: Optional[int] = None  # the link as it trained (current), else its maximum
    pcie_width: Optional[int] = None
    pcie_rx_mib_per_s: Optional[float] = None


class RankSummary(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A rank over the steady state: a row of the per-rank table."""

    rank: int
    pid: int
    node: str = ""
    local_rank: Optional[int] = None
    steps: Optional[float] = None
    step_source: Optional[str] = None  # "gputriage.step" or "main loop"
    median_step_us: Optional[float] = None
    p90_step_us: Optional[float] = None
    shares: dict[str, float] = {}  # its main thread's time by stack sampler category, "loader" and "runq"
    own_step_us: Optional[float] = None  # its step time outside collective waits
    score: Optional[float] = None  # its time outside collective waits against the best rank's (1: the best)
    slow_windows: int = 0  # windows in which it held the others back
    windows: int = 0
    main_cpu_pct: Optional[float] = None
    cpu_pct: Optional[float] = None  # its process, % of one core
    cores: Optional[str] = None
    gpu: Optional[RankGpu] = None
    lines: list[RankLine] = []  # its main thread's top lines


class Straggler(msgspec.Struct, kw_only=True):
    """The rank the others wait for."""

    rank: int
    score: float  # its time outside collective waits per step against the best rank's
    best_rank: int
    chronic: bool  # slow in most windows (else one-off stalls)
    slow_windows: int
    windows: int
    others_collective_wait_share: float  # the effect: the other ranks' time waiting in collectives


class RanksReport(msgspec.Struct, kw_only=True):
    """The job's ranks side by side (`run` of a launcher; `gputriage join` over several nodes)."""

    job_id: Optional[str] = None
    world_size: Optional[int] = None
    nodes: list[str] = []
    per_rank: list[RankSummary] = []
    compared_on: str = "own_step_us"  # the time outside collective waits (per step where steps are known)
    stragglers: list[int] = []  # as the trace report's: the ranks the others wait for
    straggler: Optional[Straggler] = None
    hangs: list[HangEvent] = []
    series: list[RankSeries] = []  # each rank's windows: what `gputriage join` judges again
    notes: list[str] = []


JOIN_SCHEMA = "gputriage.join"
JOIN_VERSION = 1


class JoinReport(msgspec.Struct, kw_only=True):
    """One job's ranks joined from the records of its nodes (`gputriage join`): each node's `run` kept its own."""

    schema: str = JOIN_SCHEMA
    version: int = JOIN_VERSION
    job_id: Optional[str] = None
    sources: list[str] = []  # the records joined: files, or stores and their run ids
    ranks: RanksReport = msgspec.field(default_factory=RanksReport)
    findings: list[Finding] = []
    notes: list[str] = []

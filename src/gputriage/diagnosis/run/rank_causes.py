"""Why the straggler of a distributed job is slow, from its own evidence against its peers' (the other ranks'
median): the run's rank rules (`rules/straggler_*.py`) each read one of these. The ranks, compared once per
judgement (`rank_compare.compare`), are the run's `RanksEvidence`; each rank's GPU is read from the run's windows
over the steady state (`rank_gpus`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gputriage.inworkload.stack_categories import COMPILE, GC, HOST_COMPUTE, INPUT_WAIT, LAUNCH
from gputriage.model.finding import Severity, Threshold
from gputriage.model.numbers import median
from gputriage.model.ranks import RankGpu, RankLine, RanksReport, RankSummary, Straggler
from gputriage.model.run import GpuStatic
from gputriage.model.window import WindowMetrics, Windows

SOURCE = "the 2-rank gloo jobs of examples/distributed recorded on 2 loaded CPU cores (tests/fixtures/ranks/)"
CAUSE_GAP = Threshold(
    "straggler_cause_gap",
    0.1,
    "share of its time",
    "how much more of its main thread's time the straggler spends in a kind of work than its peers (their median) "
    "for that work to be its cause",
    f"{SOURCE}: a 50 ms sleep per step in one rank's loader makes 40-60% of its time against its peer's 0-5%",
)
CLOCK_GAP = Threshold(
    "straggler_clock_gap",
    0.05,
    "share of the peers' SM clock",
    "how much lower the straggler GPU's SM clock runs than its peers' (their median) for its clocks to be a cause",
    "judgement: a throttled H100 loses 10-30% of its clock; boost clocks differ by a few percent between cards",
)
THROTTLED = Threshold(
    "straggler_throttled_share",
    0.1,
    "share of samples",
    "samples of the straggler's GPU with a thermal, hardware or power-cap slowdown reason, from which it is throttled",
    "judgement: a tenth of the steady state",
)


@dataclass(frozen=True)
class RanksEvidence:
    """The job's ranks compared: the report's table and straggler, what the straggler and its peers did."""

    report: RanksReport

    @property
    def straggler(self) -> RankSummary | None:
        s = self.report.straggler
        return next((r for r in self.report.per_rank if s is not None and r.rank == s.rank), None)

    @property
    def peers(self) -> list[RankSummary]:
        s = self.report.straggler
        return [r for r in self.report.per_rank if s is None or r.rank != s.rank]

    def excess(self, share: Callable[[RankSummary], float]) -> float:
        """How much more of its time the straggler spends in a kind of work than its peers' median (0 without one)."""
        s, peers = self.straggler, self.peers
        if s is None or not peers:
            return 0.0
        return share(s) - median(share(p) for p in peers)


def share(*categories: str) -> Callable[[RankSummary], float]:
    """A rank's main thread's share of its time in these categories."""
    return lambda r: sum(r.shares.get(c, 0.0) for c in categories)


RUNQ, ON_CPU = "runq", "on_cpu"  # the main thread's time waiting for a CPU, and on one (`sampling.rank_windows`)
INPUT = share(INPUT_WAIT)
WAITS_FOR_CPU = share(RUNQ)
RUNS = share(ON_CPU)
HOST = share(HOST_COMPUTE, GC, COMPILE, LAUNCH)  # its main thread at work on the host (torch ops included)


def top_line(row: RankSummary, *categories: str) -> RankLine | None:
    """The rank's main thread's line with the most time in these categories."""
    return next((x for x in sorted(row.lines, key=lambda x: -x.share) if x.category in categories), None)


def at(line: RankLine | None) -> str:
    """A line as a finding names it: "file.py:42 (function)", or ""."""
    return f"{line.file}:{line.line} ({line.function})" if line is not None else ""


def waits_for_input(ev: RanksEvidence) -> bool:
    return ev.excess(INPUT) >= CAUSE_GAP.value


def waits_for_cpu(ev: RanksEvidence) -> bool:
    """Its main thread waits for a CPU more than its peers' while it runs no more than theirs: another process holds
    its cores (a rank that computes more on a loaded machine also queues more, in proportion: that is its work)."""
    return ev.excess(WAITS_FOR_CPU) >= CAUSE_GAP.value and ev.excess(RUNS) < CAUSE_GAP.value


def computes_on_host(ev: RanksEvidence) -> bool:
    """Its main thread runs on a CPU more than its peers' (more work), or is seen at its Python lines more than
    theirs beyond what waiting for a CPU explains (waiting for the interpreter lock another of its threads holds)."""
    return ev.excess(RUNS) >= CAUSE_GAP.value or ev.excess(HOST) - max(0.0, ev.excess(WAITS_FOR_CPU)) >= CAUSE_GAP.value


def gpu_throttled(ev: RanksEvidence) -> bool:
    """Its GPU slowed down (a thermal, hardware or power-cap reason) and clocked lower than its peers'."""
    s, peers = ev.straggler, [p.gpu for p in ev.peers if p.gpu is not None and p.gpu.sm_clock_mhz]
    if s is None or s.gpu is None or not s.gpu.sm_clock_mhz or not peers:
        return False
    slowed = max(s.gpu.throttled_share or 0.0, s.gpu.power_capped_share or 0.0) >= THROTTLED.value
    lower = s.gpu.sm_clock_mhz <= (1 - CLOCK_GAP.value) * median(p.sm_clock_mhz or 0.0 for p in peers)
    return slowed and lower


def gpu_differs(ev: RanksEvidence) -> str:
    """How the straggler's GPU differs from its peers' ("" where it does not): another model, a narrower or slower
    PCIe link."""
    s, peers = ev.straggler, [p.gpu for p in ev.peers if p.gpu is not None]
    if s is None or s.gpu is None or not peers:
        return ""
    g = s.gpu
    names = [p.name for p in peers if p.name]
    if g.name and names and all(n != g.name for n in names):
        return f"a {g.name} where its peers have {names[0]}"
    for what, mine, theirs in (
        ("PCIe width", g.pcie_width, [p.pcie_width for p in peers if p.pcie_width]),
        ("PCIe generation", g.pcie_gen, [p.pcie_gen for p in peers if p.pcie_gen]),
    ):
        if mine and theirs and mine < median(theirs):
            return f"its {what} is {mine} where its peers' is {median(theirs):g}"
    return ""


CAUSES: Mapping[str, Callable[[RanksEvidence], object]] = {
    "input": waits_for_input,
    "cpu_shared": waits_for_cpu,
    "host_compute": computes_on_host,
    "gpu_throttled": gpu_throttled,
    "gpu_differs": gpu_differs,
}


def named_causes(ev: RanksEvidence) -> list[str]:
    """The causes the straggler's own evidence names."""
    return [name for name, holds in CAUSES.items() if holds(ev)]


def _median_of(ws: list[WindowMetrics], name: str) -> float | None:
    xs = [x for x in (getattr(w, name) for w in ws) if x is not None]
    return round(median(xs), 3) if xs else None


def rank_gpus(
    series_gpu: Mapping[int, int | None], windows: Mapping[int, Windows], static: Mapping[int, GpuStatic], t0: float
) -> dict[int, RankGpu]:
    """Each rank's GPU over the steady state (from `t0`, unix s): the medians of its windows and what it is."""
    out = {}
    for rank, gpu in series_gpu.items():
        if gpu is None or gpu not in windows:
            continue
        ws = [w for w in windows[gpu] if w.t0_s >= t0]
        med = lambda name, ws=ws: _median_of(ws, name)
        g = static.get(gpu, GpuStatic())
        out[rank] = RankGpu(
            index=gpu,
            name=g.name,
            sm_active_pct=med("sm_active_pct"),
            util_pct=med("util_pct"),
            sm_clock_mhz=med("sm_clock_mhz"),
            throttled_share=med("throttled_share"),
            power_capped_share=med("power_capped_share"),
            pcie_gen=g.pcie_gen_current or g.pcie_gen_max,
            pcie_width=g.pcie_width_current or g.pcie_width_max,
            pcie_rx_mib_per_s=med("pcie_rx_mib_per_s"),
        )
    return out


def pattern(s: Straggler) -> str:
    """Chronic or one-off, in words: "in 9 of 10 rounds" / "one-off: stalled in 1 of 10 rounds"."""
    if s.chronic:
        return f"chronic: slow in {s.slow_windows} of {s.windows} rounds"
    return f"one-off: stalled in {s.slow_windows} of {s.windows} rounds"


def occurrence(ev: RanksEvidence) -> tuple[dict[str, Any], dict[str, Any], Severity, float]:
    """What every straggler finding carries: its evidence (the straggler, its score, its peers' collective wait as
    the effect), the figures its words name, its severity (warn when chronic, info for one-off stalls) and what fixing
    it recovers (the others' time waiting in collectives over the steady state)."""
    s, row = ev.report.straggler, ev.straggler
    assert s is not None and row is not None
    evidence = {
        "rank": s.rank,
        "score": s.score,
        "best_rank": s.best_rank,
        "chronic": s.chronic,
        "slow_rounds": s.slow_windows,
        "rounds": s.windows,
        "others_collective_wait_share": s.others_collective_wait_share,
        "shares": {k: v for k, v in row.shares.items() if v},
        "peers_shares": {k: x for k in row.shares if (x := round(median(p.shares.get(k, 0.0) for p in ev.peers), 4))},
    }
    fill = {
        "rank": s.rank,
        "score": s.score,
        "pattern": pattern(s),
        "others_wait": s.others_collective_wait_share,
        "best_rank": s.best_rank,
    }
    return evidence, fill, Severity.warn if s.chronic else Severity.info, s.others_collective_wait_share

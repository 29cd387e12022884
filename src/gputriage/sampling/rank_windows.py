"""Each rank of a distributed job cut into windows as samples arrive: a window from one reading of a rank to the next
(about a second), its main thread's time by category (`progress.main_shares`, its input waits capped at its time off
the CPU), on a CPU ("on_cpu") and waiting for one ("runq"), its steps and their durations, its process's CPU. Past
`capacity` windows of a rank, neighbours are merged two by two: a run of any length keeps a bounded series. Also each
rank's stack counts with their lines now and then (`snapshots`), its GPU (the one its process held a context on), and
the hangs the samples carried."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from gputriage.model.ranks import RankSeries, RankWindow, merge_windows
from gputriage.model.sample import HangEvent, RankSample, Sample
from gputriage.sampling.progress import main_shares

CAPACITY = 2048  # windows kept per rank before neighbours merge
RUNQ = "runq"  # the share of a window the main thread waited for a CPU (runnable, not running)
ON_CPU = "on_cpu"  # the share of a window the main thread ran on a CPU
SNAPSHOTS = 128  # a rank's stack counts with their lines kept over a run (every other one dropped beyond)


def window(a: RankSample, b: RankSample, t0_s: float, t1_s: float) -> RankWindow | None:
    """A rank's window between two of its readings; None where its stack sampler wrote nothing new."""
    sa, sb = a.stacks, b.stacks
    if sa is None or sb is None or sb.ticks <= sa.ticks or t1_s <= t0_s:
        return None
    main = {k: v - sa.main.get(k, 0.0) for k, v in sb.main.items()}
    if min(main.values(), default=0.0) < 0:
        return None
    wall = sb.wall_s - sa.wall_s
    cpu = sb.main_cpu_s - sa.main_cpu_s if sb.main_cpu_s is not None and sa.main_cpu_s is not None else None
    shares = main_shares(main, sb.ticks - sa.ticks, cpu, wall)
    if b.main_runq_s is not None and a.main_runq_s is not None and wall > 0:
        shares[RUNQ] = min(1.0, max(0.0, (b.main_runq_s - a.main_runq_s) / wall))
    if cpu is not None and wall > 0:
        shares[ON_CPU] = min(1.0, max(0.0, cpu / wall))
    hist = {k: v - a.step_hist.get(k, 0.0) for k, v in b.step_hist.items() if v > a.step_hist.get(k, 0.0)}
    steps = None if b.steps_total is None else b.steps_total - (a.steps_total or 0.0)
    pct = None
    if b.process_cpu_s is not None and a.process_cpu_s is not None:
        pct = 100 * max(0.0, b.process_cpu_s - a.process_cpu_s) / (t1_s - t0_s)
    return RankWindow(
        t0_s=t0_s,
        t1_s=t1_s,
        samples=sb.ticks - sa.ticks,
        shares={k: round(v, 4) for k, v in shares.items()},
        steps=steps,
        step_hist=hist,
        cpu_pct=pct,
    )


@dataclass
class _Rank:
    last: RankSample
    last_t: float
    series: RankSeries


class RankWindows:
    """A sink of samples: each rank's windows (`series()`), the hangs seen (`hangs`)."""

    def __init__(self, node: str | None = None, capacity: int = CAPACITY) -> None:
        self.node = node if node is not None else socket.gethostname()
        self.capacity = capacity
        self.hangs: list[HangEvent] = []
        self._ranks: dict[int, _Rank] = {}

    def add(self, s: Sample) -> None:
        if s.hang is not None:
            self.hangs.append(s.hang)
        gpus = {p.pid: p.gpu for p in s.job_processes}
        for r in s.ranks:
            k = self._ranks.get(r.rank)
            if k is None or k.last.pid != r.pid:  # a rank's first reading (or its process restarted)
                series = RankSeries(rank=r.rank, pid=r.pid, node=self.node)
                k = self._ranks[r.rank] = _Rank(r, s.t_s, series if k is None else k.series)
                k.series.pid = r.pid
            else:
                w = window(k.last, r, k.last_t, s.t_s)
                if w is not None:
                    self._keep(k.series, w)
                    k.last, k.last_t = r, s.t_s
            x = k.series
            x.local_rank, x.world_size, x.job_id = r.local_rank, r.world_size, r.job_id
            x.step_source, x.cores = r.step_source or x.step_source, r.cores
            x.gpu = gpus.get(r.pid, x.gpu)
            if r.stacks is not None and r.stacks.lines is not None:
                x.snapshots.append((s.t_s, r.stacks))
                if len(x.snapshots) > SNAPSHOTS:  # thinned, the first and the newest kept
                    x.snapshots = x.snapshots[:-1:2] + x.snapshots[-1:]

    def _keep(self, series: RankSeries, w: RankWindow) -> None:
        series.windows.append(w)
        if len(series.windows) > self.capacity:
            ws = series.windows
            series.windows = [merge_windows(ws[i], ws[i + 1]) for i in range(0, len(ws) - 1, 2)] + (
                [ws[-1]] if len(ws) % 2 else []
            )

    def series(self) -> list[RankSeries]:
        """Each rank's series, by rank."""
        return [self._ranks[n].series for n in sorted(self._ranks)]

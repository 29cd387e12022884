"""Each rank of a distributed job at one sample, from its stack sampler's report (`inworkload.rank_clock`: who it is,
its steps, its main thread's waits, where it is now) and its process (CPU time, the cores it may run on).

A launcher's own process under Slurm or MPI has a rank variable too (SLURM_PROCID): where any process has torch's
RANK, only those count. Two processes with one rank (a rank restarted by the elastic agent): the newer counts."""

from __future__ import annotations

import time
from typing import Any, Callable

from gputriage.backends import rank_process
from gputriage.inworkload.stack_categories import CATEGORIES, LOADER
from gputriage.model.sample import RankNow, RankSample, StackCounts, StackLine

NOW_STACK_AFTER_S = 2.0  # a rank's stack is carried once its main thread has been in one category this long
# a rank's top lines are carried every max(1 s, 5% of its time so far), at least every 10 s: near the start of its
# steady state, whenever that is, and a few kB a minute later
LINES_EVERY_S, LINES_EVERY_SHARE, LINES_EVERY_MAX_S = 1.0, 0.05, 10.0


def _stacks(report: dict[str, Any], lines: bool) -> StackCounts:
    main = {c: float(report["main"].get(c, 0.0)) for c in CATEGORIES}
    main[LOADER] = float(report.get("main_loader", 0.0))
    out = StackCounts(
        ticks=float(report.get("ticks", 0.0)),
        main=main,
        all={c: float((report.get("all") or {}).get(c, 0.0)) for c in CATEGORIES},
        main_cpu_s=report.get("main_cpu_s"),
        wall_s=float(report.get("wall_s", 0.0)),
    )
    if lines:
        rows = []
        for row in report.get("lines") or []:
            try:
                rows.append(StackLine(str(row[0]), int(row[1]), str(row[2]), str(row[3]), float(row[4]), float(row[5])))
            except (IndexError, TypeError, ValueError):
                continue
        out.lines = [x for x in rows if x.main > 0][:20]
    return out


def _now(report: dict[str, Any], t_s: float) -> RankNow | None:
    now = report.get("now")
    if not isinstance(now, list) or len(now) < 3:
        return None
    category, since_s, frames = str(now[0]), float(now[1]), now[2]
    out = RankNow(category=category, since_s=since_s)
    if t_s - since_s >= NOW_STACK_AFTER_S and isinstance(frames, list):
        out.stack = [f"{f[0]}:{f[1]} {f[2]}" for f in frames if isinstance(f, list) and len(f) >= 3]
    return out


def chosen(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reports of the job's ranks: not a spawned helper; torch's RANK over a launcher's rank variable; the newer
    process of a rank."""
    ranks = [r for r in reports if isinstance(r.get("rank"), dict) and not r.get("child")]
    if any(r["rank"].get("source") == "RANK" for r in ranks):
        ranks = [r for r in ranks if r["rank"].get("source") == "RANK"]
    newest: dict[int, dict[str, Any]] = {}
    for r in ranks:
        n = r["rank"].get("rank")
        if isinstance(n, int) and (n not in newest or float(r.get("t_s", 0)) > float(newest[n].get("t_s", 0))):
            newest[n] = r
    return [newest[n] for n in sorted(newest)]


class RankReader:
    """The ranks' readings: the process of each read with its report; the top lines every `LINES_EVERY_S`."""

    def __init__(self, clock: Callable[[], float] = time.time, machine_cores: int | None = None) -> None:
        self.clock = clock
        self.machine_cores = machine_cores or len(rank_process.cores(0) or []) or None
        self._lines_s: dict[int, float] = {}  # by pid: when its lines were last carried
        self._first_s: dict[int, float] = {}  # and when it was first read

    def read(self, reports: list[dict[str, Any]]) -> list[RankSample]:
        now = self.clock()
        out = []
        for r in chosen(reports):
            who, pid = r["rank"], int(r.get("pid", 0))
            age = now - self._first_s.setdefault(pid, now)
            every = min(LINES_EVERY_MAX_S, max(LINES_EVERY_S, LINES_EVERY_SHARE * age))
            lines = pid not in self._lines_s or now - self._lines_s[pid] >= every
            if lines:
                self._lines_s[pid] = now
            got = r.get("steps")
            steps: dict[str, Any] = got if isinstance(got, dict) else {}
            cores = rank_process.cores(pid)
            out.append(
                RankSample(
                    rank=int(who["rank"]),
                    pid=pid,
                    local_rank=who.get("local_rank"),
                    world_size=who.get("world_size"),
                    job_id=who.get("job_id"),
                    source=str(who.get("source", "RANK")),
                    steps_total=steps.get("total"),
                    step_source=steps.get("source"),
                    step_hist={str(i): float(x) for i, x in enumerate(steps.get("hist") or []) if x},
                    stacks=_stacks(r, lines),
                    main_runq_s=r.get("main_runq_s"),
                    process_cpu_s=rank_process.cpu_s(pid),
                    cores=rank_process.cpu_list(cores) if cores and len(cores) != self.machine_cores else None,
                    now=_now(r, now),
                )
            )
        return out

"""A hang of a distributed job, seen while it runs: ranks have waited in a collective longer than `hang_after_s`
and the others have not arrived (or every rank waits). Said once per hang (`HangWatch.update` returns it the first
time, nothing until it clears), by `run` from the ranks' stack samplers, by `watch` and the exporter from py-spy's
dumps of the processes on the GPUs."""

from __future__ import annotations

from gputriage.inworkload.stack_categories import COLLECTIVE_WAIT
from gputriage.model.finding import Threshold
from gputriage.model.sample import HangEvent, RankSample

HANG_AFTER = Threshold(
    "hang_after_s",
    300.0,
    "s",
    "how long ranks wait in a collective while others have not arrived before the job is said to hang",
    "judgement: longer than the collectives, checkpoints and evaluations most training steps wait through; well "
    "inside the process group's own timeout (10 min for NCCL, 30 min for gloo), while the job can still be looked at",
)


class HangWatch:
    """Fed each reading of a job's ranks (their main thread's category and since when), says a hang once."""

    def __init__(self, after_s: float | None = None, node: str = "", source: str = "stack sampler") -> None:
        self.after_s = HANG_AFTER.value if after_s is None else after_s
        self.node, self.source = node, source
        self.said: frozenset[int] | None = None  # the waiting ranks of the hang said last (None: none now)

    def update(self, t_s: float, ranks: list[RankSample]) -> HangEvent | None:
        """The hang, the first time it is seen; None before, after and without one."""
        now = {r.rank: r for r in ranks if r.now is not None}
        waiting = {k for k, r in now.items() if r.now and r.now.category == COLLECTIVE_WAIT}
        long = {k for k in waiting if t_s - now[k].now.since_s >= self.after_s}  # type: ignore[union-attr]
        if not long:
            self.said = None
            return None
        if waiting - long or self.said is not None:  # a rank just arrived, or this hang was said
            return None
        self.said = frozenset(long)
        missing = sorted(set(now) - waiting)
        shown = missing or sorted(long)[:1]  # no one missing: where the waiting ranks wait
        return HangEvent(
            t_s=t_s,
            waited_s=round(min(t_s - now[k].now.since_s for k in long), 1),  # type: ignore[union-attr]
            after_s=self.after_s,
            waiting=sorted(long),
            missing=missing,
            doing={str(k): now[k].now.category for k in missing},  # type: ignore[union-attr]
            stacks={str(k): list(now[k].now.stack) for k in shown},  # type: ignore[union-attr]
            job_id=next((r.job_id for r in ranks if r.job_id), None),
            node=self.node,
            source=self.source,
            world_size=max((r.world_size or 0 for r in ranks), default=0) or None,
        )


def said(event: HangEvent) -> str:
    """The hang in one line, as `run` and `watch` print it."""
    where = f" on {event.node}" if event.node else ""
    waiting = f"rank{'s' if len(event.waiting) > 1 else ''} {', '.join(map(str, event.waiting))}"
    if event.missing:
        head = (
            f"hang{where}: {waiting} waited {event.waited_s:.0f} s in a collective for rank"
            f"{'s' if len(event.missing) > 1 else ''} {', '.join(map(str, event.missing))}, which did not arrive"
        )
    elif event.world_size and len(event.waiting) < event.world_size:
        head = f"hang{where}: every rank here ({waiting}) waited {event.waited_s:.0f} s in a collective: the ranks "
        head += "it waits for run on other nodes"
    else:
        head = f"hang{where}: every rank ({waiting}) waited {event.waited_s:.0f} s in one collective"
    parts = [head]
    for k, frames in event.stacks.items():
        doing = event.doing.get(k)
        parts.append(f"  rank {k}" + (f" ({doing})" if doing else "") + ": " + (" <- ".join(frames[:4]) or "no stack"))
    return "\n".join(parts)

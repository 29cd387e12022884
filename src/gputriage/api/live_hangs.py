"""A hang of a distributed job said while it runs, for what gputriage did not start (`watch`, the exporter): py-spy's
dumps of the processes on the GPUs that are ranks (`sampling.pyspy_ranks`) read by `diagnosis.run.hang.HangWatch`;
the hang said once, on stderr, and handed to whoever keeps it (the watch's store, the exporter's state)."""

from __future__ import annotations

import threading
from typing import Any, Callable

from gputriage.diagnosis.run.hang import HangWatch, said
from gputriage.model.sample import HangEvent, Sample
from gputriage.sampling.pyspy_ranks import PySpyRanks


class LiveHangs:
    """Fed py-spy's dumps (`on_dump`); says a hang once (`say`) and keeps it (`kept`, `take`)."""

    def __init__(self, after_s: float | None, node: str, say: Callable[[str], None]) -> None:
        self.ranks = PySpyRanks()
        self.watch = HangWatch(after_s, node=node, source="py-spy")
        self.say = say
        self.kept: list[HangEvent] = []
        self._pending: list[HangEvent] = []
        self._lock = threading.Lock()

    def is_rank(self, pid: int) -> bool:
        return self.ranks.identity(pid) is not None

    def on_dump(self, pid: int, t_s: float, threads: list[Any]) -> None:
        self.ranks.add(pid, t_s, threads)
        event = self.watch.update(t_s, self.ranks.ranks())
        if event is not None:
            with self._lock:
                self.kept.append(event)
                self._pending.append(event)
            self.say(said(event))

    def sink(self, s: Sample) -> None:
        """A sink of a session's samples: the next sample carries a hang said (into the store, the windows)."""
        with self._lock:
            if self._pending:
                s.hang = self._pending.pop(0)

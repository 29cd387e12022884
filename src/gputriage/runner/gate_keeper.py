"""While a profiled workload runs: the sampler's closed windows fed to the profile gate, and the injected
profiler's gate opened when the gate says so (`diagnosis.run.profile_gate`)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from gputriage.diagnosis.run.profile_gate import ProfileGate
from gputriage.model.run import GpuStatic
from gputriage.sampling.session import Session
from gputriage.trace import inject


class GateKeeper:
    """A thread polling the session's windows every POLL_S; `stop()` ends it (idempotent)."""

    POLL_S = 0.25

    def __init__(self, session: Session, folder: Path, mode: str) -> None:
        self.session, self.folder = session, folder
        self.gate = ProfileGate(mode, {i: session.meta.gpus.get(str(i), GpuStatic()) for i in session.gpus})
        self.seen = dict.fromkeys(session.gpus, 0)
        self.judged = 0  # profiled windows compared with the run
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="gputriage-profile-gate", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(self.POLL_S):
            for i in self.session.gpus:
                series = self.session.windows.series[i]
                while self.seen[i] < len(series):
                    try:
                        w = series[self.seen[i]]
                    except IndexError:  # the window is being appended: next time
                        break
                    self.gate.add(i, w)
                    self.seen[i] += 1
            if self.gate.first(time.time()) is not None:
                inject.open_gate(self.folder, self.gate.asked)
            windows = inject.profiled_windows(self.folder)
            for profiled in windows[self.judged:]:
                self.judged += 1
                if self.gate.again(profiled) is not None:
                    inject.open_gate(self.folder, self.gate.asked)
            if self.gate.late() is not None:
                inject.open_gate(self.folder, self.gate.asked)

    def stop(self) -> None:
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)

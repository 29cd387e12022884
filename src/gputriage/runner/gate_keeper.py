"""While a profiled workload runs: the sampler's closed windows fed to the profile gate, and the injected
profiler's gate opened when the gate says so (`diagnosis.run.profile_gate`): at the steady state, again, in each
new regime — and when a user asks, from another terminal (`gputriage profile RUN_ID`, which leaves a request in
the folder's `asks/`) or by SIGUSR1 to `gputriage run` (`request`).

A request is `asks/ask-ID.json` (`{"out": PATH or null}`); the keeper takes it at once and answers in
`asks/answer-ID.json`: `{"state": "asked", "window": K, "trace": PATH}`, then `"written"` with the window's times
once the trace is kept at PATH, or `"failed"` with why (the workload ended first, the profiler failed). A workload
that has not used CUDA (the hook's `OUT.state`: torch not imported, or CUDA not initialized) is answered at once
`{"state": "no_cuda", "error": WHY}`, and no window is asked. A window asked without a path (a signal) is kept
beside `--keep-trace`'s path (`NAME.wK.json`), else in the directory `gputriage run` was started from
(`gputriage-profile-RUN-wK.json`)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gputriage.diagnosis.run.profile_gate import ProfileGate
from gputriage.model.run import GpuStatic
from gputriage.sampling.session import Session
from gputriage.trace import inject
from gputriage.trace.profile_files import TRACE_NAME, current_holds, first_out, profiled_windows, ranks, read_holds

ASKS = "asks"
# what the hooks say of a workload that has not used CUDA (`inworkload.profiler_hook.ready`); one importing torch
# is asked (it is seconds from saying which)
NOTHING_TO_PROFILE = {
    "no_torch": "the workload has not imported torch: no GPU work to profile (ask again once it uses CUDA)",
    "no_cuda": "the workload has not used CUDA (torch imported, CUDA not initialized): no GPU work to profile "
    "(ask again once it uses CUDA)",
}
STATES = ("ready", "importing", "no_cuda", "no_torch")  # the best any process said wins


@dataclass
class Asked:
    """A window a user asked for: where its trace goes, and the answer file to write."""

    window: int
    out: Path
    answer: Path | None


def workload_state(folder: Path) -> str | None:
    """What the profiler hooks last said of the workload: "ready" where one process can profile, else the nearest
    to it ("importing" torch, "no_cuda", "no_torch"); None before any hook said anything."""
    said = []
    for path in folder.glob("trace*.json.state"):
        try:
            said += path.read_text().split()[-1:]
        except OSError:
            continue
    return next((s for s in STATES if s in said), said[0] if said else None)


def write_json(path: Path, data: dict[str, object]) -> None:
    """Replaced at once: a reader never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


class GateKeeper:
    """A thread polling the session's windows every POLL_S; `stop()` ends it (idempotent)."""

    POLL_S = 0.25

    def __init__(
        self,
        session: Session,
        folder: Path,
        mode: str,
        keep: Path | None = None,
        say: Callable[[str], None] = lambda _m: None,
    ) -> None:
        self.session, self.folder, self.keep, self.say = session, folder, keep, say
        self.gate = ProfileGate(mode, {i: session.meta.gpus.get(str(i), GpuStatic()) for i in session.gpus})
        self.seen = dict.fromkeys(session.gpus, 0)
        self.judged = 0  # profiled windows compared with the run
        self.released = 0  # holds seen released (the profiler failed)
        self.asked: dict[int, Asked] = {}  # the windows users asked for and not yet written, by number
        self.outs: dict[int, str] = {}  # where each window users asked for goes, by number
        self.signals: list[float] = []  # SIGUSR1 received (`request`), not yet asked
        (folder / ASKS).mkdir(exist_ok=True)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="gputriage-profile-gate", daemon=True)
        self.thread.start()

    def request(self) -> None:
        """Ask for a window now (a signal handler's call: it only notes it)."""
        self.signals.append(time.time())

    def _loop(self) -> None:
        while not self.done.wait(self.POLL_S):
            try:
                self.poll(time.time())
            except (OSError, ValueError):  # a file half-written or gone: read again at the next round
                continue

    def poll(self, now_s: float) -> None:
        """One round: the holds and windows so far, then each rule that may ask for a window."""
        self.gate.held(current_holds(self.folder))
        for i in self.session.gpus:
            series = self.session.windows.series[i]
            while self.seen[i] < len(series):
                try:
                    w = series[self.seen[i]]
                except IndexError:  # the window is being appended: next time
                    break
                self.gate.add(i, w)
                self.seen[i] += 1
        asked = self.gate.asked
        self.gate.first(now_s)
        windows = profiled_windows(self.folder)
        for k, t0, t1 in windows[self.judged :]:
            self.judged += 1
            self.gate.again((t0, t1), k)
            if k in self.asked:
                self._written(k, t0, t1)
        first = first_out(self.folder, ranks(self.folder)[0])
        for hold in [h for h in read_holds(first.with_name(first.name + ".holds"), 0.0) if h.end == "released"][
            self.released :
        ]:
            self.released += 1
            self.gate.finished(hold.window)
            if hold.window in self.asked:
                self._answer(self.asked.pop(hold.window), state="failed", error="the profiler failed in the workload")
        self.gate.late()
        self.gate.rearm(now_s)
        self._take_asks()
        if self.gate.asked != asked:
            inject.open_gate(self.folder, self.gate.asked)

    def _take_asks(self) -> None:
        while self.signals:
            self.signals.pop()
            self._ask_one("asked by SIGUSR1 to gputriage run", None, None)
        for path in sorted((self.folder / ASKS).glob("ask-*.json")):
            try:
                data = json.loads(path.read_text())
                path.unlink()
            except (OSError, ValueError):
                continue
            out = data.get("out") if isinstance(data, dict) else None
            by = data.get("by") if isinstance(data, dict) else None
            self._ask_one(
                "asked from another terminal (gputriage profile" + (f", pid {by})" if by else ")"),
                Path(out) if isinstance(out, str) and out else None,
                path.with_name("answer-" + path.name[len("ask-") :]),
            )

    def _ask_one(self, why: str, out: Path | None, answer: Path | None) -> None:
        nothing = NOTHING_TO_PROFILE.get(workload_state(self.folder) or "")
        if nothing is not None:  # the profiler would wait for CUDA for as long as the workload runs: said now
            self._reply(answer, state="no_cuda", error=nothing)
            self.gate.notes.append(f"no window asked ({why}): {nothing}")
            self.say(f"no profile window ({why}): {nothing}")
            return
        k = self.gate.ask(why)
        if out is None:
            run = self.session.run_id if self.session.run_id is not None else os.getpid()
            out = (
                self.keep.with_name(f"{self.keep.stem}.w{k}{self.keep.suffix}")
                if self.keep is not None
                else Path.cwd() / f"gputriage-profile-{run}-w{k}.json"
            )
        self.asked[k] = a = Asked(k, out, answer)
        self.outs[k] = str(out)
        self._answer(a, state="asked", window=k, trace=str(out))
        self.say(f"profile window {k}, {why}: its trace will be written to {out}")

    def _written(self, k: int, t0: float, t1: float) -> None:
        """A window a user asked for was exported: its trace (each rank's) copied where it was asked to go."""
        a = self.asked.pop(k)
        written = []
        for t in sorted(self.folder.glob("trace*.json")):
            m = TRACE_NAME.match(t.name)
            if not m or int(m.group(2) or 1) != k:
                continue
            dest = a.out if not m.group(1) else a.out.with_name(f"{a.out.stem}.rank{m.group(1)}{a.out.suffix}")
            try:
                shutil.copy(t, dest)
            except OSError as exc:
                self._answer(
                    a, state="failed", error=f"the trace could not be written to {dest}: {exc.strerror or exc}"
                )
                return
            written.append(str(dest))
        if not written:
            self._answer(a, state="failed", error="the window saw no trace written")
            return
        self._answer(a, state="written", window=k, trace=", ".join(written), window_s=[t0, t1])
        self.say(f"profile window {k} ({t1 - t0:.2f} s) written to {', '.join(written)}")

    def _answer(self, a: Asked, **data: object) -> None:
        self._reply(a.answer, **data)

    def _reply(self, answer: Path | None, **data: object) -> None:
        if answer is not None:
            try:
                write_json(answer, data)
            except OSError:
                pass  # the asker's folder view is gone: the run's report lists the window all the same

    def stop(self) -> None:
        """The thread ended, after a last round (a window exported as the workload ended is kept); the windows users
        asked for that were never profiled are answered."""
        if self.done.is_set():
            return
        self.done.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
        try:
            self.poll(time.time())
        except (OSError, ValueError):
            pass
        for a in list(self.asked.values()):  # the run ended first
            self._answer(a, state="failed", error="the run ended before the window was profiled")
        self.asked.clear()

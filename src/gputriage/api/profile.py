"""`gputriage profile RUN_ID`: ask a running `gputriage run --profile` for one profile window, from another terminal.

The run's row in the store exists while it runs; its meta says where the run takes requests (`profile_gate`: the
profiler's folder) and which process runs it. The request is a file there (`runner.gate_keeper`); the run answers
in another, once it asked the profiler inside the workload for a window, then once the trace is written (or why
not). SIGUSR1 to the `gputriage run` process asks the same (it prints where the trace goes)."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from gputriage.api._common import GputriageError, read_store
from gputriage.runner.gate_keeper import ASKS, write_json

WAIT_S = 300.0  # how long to wait for the window by default (the first start of a profiler on a GPU: seconds)
ANSWER_WITHIN_S = 10.0  # a run that takes no request within this is not listening (gputriage killed meanwhile)


def running_gate(run_id: int, store: str | Path | None = None) -> tuple[Path, int | None]:
    """The folder where a running `run --profile` takes requests, and its process id; GputriageError why not."""
    row = read_store(store, lambda db: db.run(run_id))
    if row is None:
        raise GputriageError(f"no run {run_id} in the store (`gputriage runs` lists them)")
    if row["kind"] != "run":
        raise GputriageError(f"{run_id} is a {row['kind']}, not a run: only `gputriage run` can be profiled")
    if row["ended"] is not None:
        raise GputriageError(f"run {run_id} has ended: nothing to profile")
    meta = row["meta"] if isinstance(row["meta"], dict) else {}
    gate, pid = meta.get("profile_gate"), meta.get("gputriage_pid")
    if not isinstance(gate, str) or not gate:
        raise GputriageError(
            f"run {run_id} runs without a profiler (`--no-profile`, or not a Python command): "
            "no window can be asked for"
        )
    if isinstance(pid, int) and not _alive(pid):
        raise GputriageError(f"run {run_id} is not running (its gputriage, pid {pid}, is gone)")
    if not (Path(gate) / ASKS).is_dir():
        raise GputriageError(f"run {run_id} takes no request: {gate} is gone (another machine, or it has ended)")
    return Path(gate), pid if isinstance(pid, int) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: it exists
    return True


def ask_profile(
    run_id: int,
    store: str | Path | None = None,
    out: str | Path | None = None,
    wait_s: float = WAIT_S,
    said: Callable[[dict[str, Any]], None] = lambda _a: None,
) -> dict[str, Any]:
    """Ask a running run for a profile window and wait (up to `wait_s`; 0: not at all) for its trace. Returns the
    run's last answer: `state` ("asked", "written", "failed", or "no_cuda": a workload that has not used CUDA, no
    window asked), `window`, `trace` (where it is or will be written), `window_s` or `error`. `said` sees each
    answer as it comes."""
    gate, _pid = running_gate(run_id, store)
    dest = Path(out).resolve() if out is not None else Path.cwd() / f"gputriage-run{run_id}-profile.json"
    key = uuid.uuid4().hex[:12]
    answer = gate / ASKS / f"answer-{key}.json"
    try:
        write_json(gate / ASKS / f"ask-{key}.json", {"out": str(dest), "by": os.getpid()})
    except OSError as exc:
        raise GputriageError(f"cannot ask run {run_id} for a window ({gate}: {exc.strerror or exc})") from None
    t0, last, seen = time.monotonic(), None, ""
    while True:
        text = _read(answer)
        if text and text != seen:
            seen, last = text, json.loads(text)
            said(last)
            if last.get("state") != "asked":
                break
        waited = time.monotonic() - t0
        if last is None and waited > ANSWER_WITHIN_S:
            raise GputriageError(
                f"run {run_id} did not take the request within {ANSWER_WITHIN_S:.0f} s "
                "(is its gputriage still running?)"
            )
        if last is not None and waited > wait_s:
            break
        time.sleep(0.1)
    try:
        answer.unlink()
    except OSError:
        pass
    return last


def _read(path: Path) -> str:
    try:
        text = path.read_text()
        json.loads(text)
        return text
    except (OSError, ValueError):
        return ""

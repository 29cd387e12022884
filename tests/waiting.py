"""Waiting in tests for what a live run does (generous: the suite runs on a loaded machine): a condition, and the
run's row once its store holds it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

from gputriage.sampling.store import Store


def wait_for(done: Callable[[], bool], what: str, timeout_s: float = 120.0) -> None:
    """Wait for a condition; no assert on how long it took."""
    t0 = time.monotonic()
    while not done():
        assert time.monotonic() - t0 < timeout_s, f"never: {what}"
        time.sleep(0.02)


def stored_run(store_path: Path, run_id: int = 1) -> Optional[dict[str, Any]]:
    """The run's row as the store holds it now; None before the store or the row exists."""
    if not store_path.exists():
        return None
    db = Store(store_path, readonly=True)
    try:
        return db.run(run_id)
    finally:
        db.close()

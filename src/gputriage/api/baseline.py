"""`baseline save` and `diff`: what a workload achieves, kept by name, and two runs or baselines side by
side with what changed outside the noise and in the environment."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Sequence

import msgspec

from gputriage.api._common import GputriageError, open_store
from gputriage.diagnosis.run.baseline import against as compare_with
from gputriage.diagnosis.run.baseline import baseline
from gputriage.diagnosis.run.baseline import diff as compare
from gputriage.model.baseline import Baseline, Diff
from gputriage.model.run import RunReport
from gputriage.sampling.store import Store


def _report(db: Store, run_id: int) -> RunReport:
    """A stored run's report (GputriageError for a run without one, or none at all)."""
    row = db.run(run_id)
    if row is None:
        raise GputriageError(f"no run {run_id} in {db.path}")
    if not row["report"]:
        raise GputriageError(f"run {run_id} has no report (it did not end): `gputriage show {run_id}` judges it")
    try:
        return msgspec.json.decode(row["report"], type=RunReport)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise GputriageError(f"run {run_id}: its stored report cannot be read ({exc})") from None


def save_baseline(name: str, run_ids: Sequence[int], store: str | Path | None = None) -> Baseline:
    """Keep a baseline of these runs under `name` (replacing one of that name). A store that cannot be written
    is a GputriageError before anything is read."""
    if not name or name.isdigit():
        raise GputriageError(f"a baseline's name must not be a number (a number names a run): {name!r}")
    db = open_store(store)  # checked writable: a read-only store fails here
    assert db is not None
    try:
        b = baseline(name, [_report(db, i) for i in run_ids], time.time())
        db.save_baseline(name, b)
        return b
    except sqlite3.Error as exc:
        raise GputriageError(f"cannot write the run store {db.path}: {exc}") from None
    finally:
        db.close()


def load(what: str, store: str | Path | None = None) -> tuple[Baseline, str]:
    """A baseline by name, or a run (a number) as a baseline of one run; and how to call it."""
    db = open_store(store, readonly=True)
    assert db is not None
    try:
        if what.isdigit():
            return baseline(f"run {what}", [_report(db, int(what))], 0.0), f"run {what}"
        text = db.baseline(what)
        if text is None:
            raise GputriageError(f"no baseline or run {what!r} in {db.path} (`gputriage baseline save {what} RUN...`)")
        try:
            return msgspec.json.decode(text, type=Baseline), f"baseline {what}"
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise GputriageError(f"baseline {what!r}: it cannot be read ({exc})") from None
    except sqlite3.DatabaseError as exc:
        raise GputriageError(f"{db.path}: the run store is damaged ({exc})") from None
    finally:
        db.close()


def diff(a: str, b: str, store: str | Path | None = None) -> Diff:
    """Two runs (ids) or baselines (names) side by side."""
    (ba, la), (bb, lb) = load(a, store), load(b, store)
    return compare(ba, bb, la, lb)


def against(report: RunReport, name: str, store: str | Path | None = None) -> None:
    """`run --baseline NAME` on a finished run: this run against the baseline, in the report, and a finding when
    it regressed."""
    compare_with(report, *load(name, store))

"""`checklist`: the playbook's checklists for a sane GPU box, stable inference and reliable training,
decided by `check` and by a stored run where a measurement decides an item."""

from __future__ import annotations

from pathlib import Path

from gputriage.api._common import GputriageError, NoStoreError, open_store, stored_report
from gputriage.api.baseline import _report
from gputriage.api.check import check
from gputriage.diagnosis.checklist import KINDS, evaluate
from gputriage.model.checklist import ChecklistReport
from gputriage.model.load import LoadReport
from gputriage.model.run import RunReport


def checklist(
    kind: str,
    run_id: int | None = None,
    store: str | Path | None = None,
    snapshot: str | Path | None = None,
    load_id: int | None = None,
    full: bool = False,
) -> ChecklistReport:
    """`kind`: box (decided by `check` on this machine, or on a recorded snapshot; `full`: with the disk read
    probes), training or inference (by the stored run `run_id`, the stored load test `load_id`, and whether the
    store keeps a baseline)."""
    if kind not in KINDS:
        raise GputriageError(f"no checklist {kind!r}: one of {', '.join(KINDS)}")
    if kind == "box":
        return evaluate(kind, check=check(snapshot) if snapshot is not None else check(full=full))
    run: RunReport | None = None
    baselines = False
    try:
        db = open_store(store, readonly=True)
    except NoStoreError:
        if run_id is not None or store is not None:
            raise  # the store asked for is not there
        db = None  # no default store yet: no run, no baseline
    if db is not None:
        try:
            run = _report(db, run_id) if run_id is not None else None
            baselines = db.has_baselines()
        finally:
            db.close()
    load: LoadReport | None = stored_report(load_id, "load", LoadReport, store) if load_id is not None else None
    return evaluate(kind, run=run, baselines=baselines, load=load)

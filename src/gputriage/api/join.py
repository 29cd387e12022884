"""`join`: one distributed job's ranks from the records its nodes kept (each node's `gputriage run` of its ranks),
joined into one per-rank report, judged again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import msgspec

from gputriage.api._common import GputriageError, UsageError
from gputriage.diagnosis.run.rank_join import joined, judge_ranks
from gputriage.model.ranks import JoinReport, RanksReport
from gputriage.model.recording import Recording
from gputriage.model.run import RunMeta, RunReport
from gputriage.sampling.store import Store, StoreError
from gputriage.sampling.windows import Windower

SQLITE = b"SQLite format 3\x00"


def _files(paths: Sequence[str | os.PathLike[str]]) -> Iterable[Path]:
    """The files given, and those under the folders given (a shared folder the nodes wrote to), in order."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(x for x in p.rglob("*") if x.is_file() and x.suffix in (".json", ".sqlite", ".db"))
        elif p.exists():
            yield p
        else:
            raise UsageError(f"{p}: no such file or folder")


def _from_store(path: Path) -> list[tuple[str, RunReport]]:
    """The runs of a store whose report holds ranks."""
    try:
        db = Store(path, readonly=True)
    except StoreError as exc:
        raise GputriageError(str(exc)) from None
    out = []
    try:
        for row in db.runs(limit=10_000):
            stored = db.run(int(row["id"]))
            if stored is None or not stored.get("report") or b'"ranks":{' not in str(stored["report"]).encode():
                continue
            try:
                out.append((f"{path}#{row['id']}", msgspec.json.decode(stored["report"], type=RunReport)))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
    finally:
        db.close()
    return out


def records(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[tuple[str, RunReport]], int]:
    """The run reports with ranks among the files and folders given (a report printed by `run --json` or written by
    `run -o`, or a run store), and how many files held none."""
    found, other = [], 0
    for f in _files(paths):
        with open(f, "rb") as fh:
            head = fh.read(16)
        if head == SQLITE:
            got = _from_store(f)
        else:
            try:
                report = msgspec.json.decode(f.read_bytes(), type=RunReport)
                got = [(str(f), report)] if report.ranks is not None else []
            except (msgspec.DecodeError, msgspec.ValidationError, OSError):
                got = []
        found += got
        other += not got
    return found, other


def join(paths: Sequence[str | os.PathLike[str]], job_id: str | None = None) -> JoinReport:
    """One job's ranks joined from the records of its nodes: run reports (`run --json`, `run -o FILE`) or run stores,
    given as files or as folders holding them (files copied together, a shared folder). `job_id`: the launcher's job
    id the ranks carry (TORCHELASTIC_RUN_ID, SLURM_JOB_ID, GPUTRIAGE_JOB_ID); needed where the records hold several
    jobs. Raises UsageError when no record holds the job's ranks."""
    found, other = records(paths)
    jobs = sorted({r.ranks.job_id or "" for _, r in found if r.ranks is not None})
    if job_id is None and len(jobs) > 1:
        raise UsageError(
            f"the records hold {len(jobs)} jobs ({', '.join(j or '(no id)' for j in jobs)}): pick one with --job"
        )
    chosen = [(src, r) for src, r in found if r.ranks is not None and (job_id is None or r.ranks.job_id == job_id)]
    if not chosen:
        what = f"job {job_id}" if job_id is not None else "a distributed job"
        raise UsageError(f"no record of {what}'s ranks in {', '.join(map(str, paths))} (run reports or run stores)")
    parts: list[RanksReport] = [r.ranks for _, r in chosen if r.ranks is not None]
    ranks, notes = joined(parts)
    if ranks is None:
        raise UsageError("the records hold no rank")
    rec = Recording(kind="join", command=[], meta=RunMeta(), gpus=[], windows=Windower([]))
    if other:
        notes.append(f"{other} file(s) held no run report with ranks: left out")
    return JoinReport(
        job_id=ranks.job_id,
        sources=[src for src, _ in chosen],
        ranks=ranks,
        findings=judge_ranks(rec, ranks),
        notes=notes,
    )

"""The run store: an embedded SQLite database in WAL mode.

Samples are written in batches (about one per second) in their own transactions, so a crash or a
kill -9 of gputriage loses at most the last batch and never touches earlier runs. The file is
marked as a gputriage store (SQLite's application_id and user_version): a file that is not one
is refused, an older store is migrated in place, and reading commands open it read-only.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

import msgspec

from gputriage.model.run import RunReport
from gputriage.model.sample import Sample, decode, encode

APPLICATION_ID = 0x47505554  # "GPUT"
VERSION = 3  # 1: runs without their report (verdict and findings only); 2: no baselines
TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,            -- 'run', 'watch' or 'monitor'
    command TEXT NOT NULL,         -- JSON list of argv
    started REAL NOT NULL,         -- unix seconds
    ended REAL,                    -- NULL while running, or when gputriage died
    exit_code INTEGER,
    meta TEXT NOT NULL,            -- JSON: host, GPUs, driver, environment fingerprint
    verdict TEXT,                  -- JSON
    findings TEXT,                 -- JSON list
    report TEXT                    -- JSON: the whole RunReport, as `run --json` printed it
);
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t REAL NOT NULL,
    data TEXT NOT NULL             -- JSON sample
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, t);
CREATE TABLE IF NOT EXISTS benches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started REAL NOT NULL,
    machine TEXT NOT NULL,         -- hostname and GPU UUIDs: "the same machine"
    results TEXT NOT NULL          -- JSON list of probe results
);
CREATE TABLE IF NOT EXISTS baselines (
    name TEXT PRIMARY KEY,
    created REAL NOT NULL,         -- unix seconds
    baseline TEXT NOT NULL         -- JSON: the Baseline (its runs' figures, median and spread, and fingerprint)
);
"""
LEGACY_RUN_COLUMNS = {"id", "kind", "command", "started", "ended", "exit_code", "meta", "verdict", "findings"}


class StoreError(Exception):
    """The store cannot be opened, is not a gputriage store, or cannot be written."""


class MissingStoreError(StoreError):
    """A store opened to be read is not there."""


def default_path() -> Path:
    env = os.environ.get("GPUTRIAGE_STORE")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("gputriage")) / "runs.sqlite"


class Store:
    def __init__(self, path: str | Path | None = None, readonly: bool = False) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.readonly = readonly
        try:
            if readonly:
                if not self.path.exists():
                    raise MissingStoreError(f"{self.path}: no such run store")
                self.db = self._open_readonly()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False, isolation_level=None)
                self._check(migrate=True)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from None
        self.has_report = "report" in self._columns("runs")
        self.skipped = 0

    def _open_readonly(self) -> sqlite3.Connection:
        """Read-only; in a directory where SQLite cannot create its WAL index, as an immutable file."""
        for mode in ("mode=ro", "immutable=1"):
            db = sqlite3.connect(
                f"file:{self.path}?{mode}", uri=True, timeout=10, check_same_thread=False, isolation_level=None
            )
            self.db = db
            try:
                self._check(migrate=False)
                return db
            except sqlite3.OperationalError:
                db.close()
                if mode == "immutable=1":
                    raise
        raise AssertionError("unreachable")

    def _tables(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _ready(self) -> bool:
        """Whether the store has its tables: a store another process has just created may not have them yet, and
        reads as an empty one."""
        return {"runs", "samples"} <= self._tables()

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}

    def _check(self, migrate: bool) -> None:
        """Ours (any version up to this one), an empty file, or refused."""
        app = self.db.execute("PRAGMA application_id").fetchone()[0]
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        tables = self._tables()
        if app == APPLICATION_ID:
            if version > VERSION:
                raise StoreError(
                    f"{self.path}: a store of a newer gputriage (version {version}; this one reads up to {VERSION})"
                )
        elif app != 0 or (tables and not (self._columns("runs") >= LEGACY_RUN_COLUMNS and "samples" in tables)):
            raise StoreError(
                f"{self.path}: not a gputriage run store (an SQLite file of another program); give another --store"
            )
        if not migrate:
            return
        if app != APPLICATION_ID or version < VERSION:
            self.db.executescript(TABLES)
            if "report" not in self._columns("runs"):
                self.db.execute("ALTER TABLE runs ADD COLUMN report TEXT")
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.db.execute(f"PRAGMA user_version = {VERSION}")

    def close(self) -> None:
        self.db.close()

    def check_writable(self) -> None:
        """Raise StoreError now, before a workload starts, if nothing can be written."""
        try:  # a write rolled back: SQLite takes the write lock of a read-only file without complaint
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(f"PRAGMA user_version = {int(version)}")
            finally:
                self.db.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the run store {self.path}: {exc}") from None

    def begin_run(self, kind: str, command: list[str], meta: Any) -> int:
        cur = self.db.execute(
            "INSERT INTO runs(kind, command, started, meta) VALUES (?, ?, ?, ?)",
            (kind, json.dumps(command), time.time(), msgspec.json.encode(meta).decode()),
        )
        return int(cur.lastrowid or 0)

    def discard_run(self, run_id: int) -> None:
        """Remove a run and its samples (one that never ran: its command could not start)."""
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
            self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def add_samples(self, run_id: int, samples: list[Sample]) -> None:
        rows = [(run_id, s.t_s, encode(s).decode()) for s in samples]
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO samples(run_id, t, data) VALUES (?, ?, ?)", rows)

    def end_run(self, report: RunReport) -> None:
        enc = msgspec.json.encode
        self.db.execute(
            "UPDATE runs SET ended = ?, exit_code = ?, verdict = ?, findings = ?, report = ? WHERE id = ?",
            (
                time.time(),
                report.exit_code,
                enc(report.verdict).decode(),
                enc(report.findings).decode(),
                enc(report).decode(),
                report.id,
            ),
        )

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest runs; a row damaged by hand or by a disk shows what could be read of it."""
        if not self._ready():
            return []
        cur = self.db.execute(
            "SELECT r.id, r.kind, r.command, r.started, r.ended, r.exit_code, r.verdict, "
            "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id) FROM runs r "
            "ORDER BY r.id DESC LIMIT ?",
            (limit,),
        )
        out = []
        for rid, kind, cmd, started, ended, code, verdict, n in cur.fetchall():
            v = _json(verdict, {})
            command = _json(cmd, [])
            out.append(
                {
                    "id": rid,
                    "kind": str(kind),
                    "command": [str(x) for x in command] if isinstance(command, list) else [str(command)],
                    "started": started if isinstance(started, (int, float)) else 0.0,
                    "ended": ended if isinstance(ended, (int, float)) else None,
                    "exit_code": code,
                    "samples": n,
                    "bottleneck": v.get("bottleneck") if isinstance(v, dict) else None,
                    "complete": ended is not None,
                }
            )
        return out

    def run(self, run_id: int) -> dict[str, Any] | None:
        """A stored run: its columns, and its report when it has one (JSON, as `run --json` printed it)."""
        if not self._ready():
            return None
        report = ", report" if self.has_report else ""
        row = self.db.execute(
            "SELECT id, kind, command, started, ended, exit_code, meta, verdict, findings"
            f"{report} FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            return None
        rid, kind, cmd, started, ended, code, meta, verdict, findings = row[:9]
        command = _json(cmd, [])
        return {
            "id": rid,
            "kind": str(kind),
            "command": [str(x) for x in command] if isinstance(command, list) else [],
            "started": started,
            "ended": ended,
            "exit_code": code if isinstance(code, int) else None,
            "meta": _json(meta, {}),
            "verdict": _json(verdict, None),
            "findings": _json(findings, []),
            "complete": ended is not None,
            "report": row[9] if self.has_report else None,
        }

    def add_bench(self, machine: str, results: list[dict[str, Any]]) -> int:
        cur = self.db.execute(
            "INSERT INTO benches(started, machine, results) VALUES (?, ?, ?)",
            (time.time(), machine, json.dumps(results, default=str)),
        )
        return int(cur.lastrowid or 0)

    def last_bench(self, machine: str | None = None, gpu_uuid: str | None = None) -> dict[str, Any] | None:
        """The newest bench of this machine, or of a machine holding this GPU, or of any machine."""
        if "benches" not in self._tables():
            return None
        where, args = (
            ("WHERE machine = ?", (machine,))
            if machine is not None
            else ("WHERE instr(machine, ?) > 0", (gpu_uuid,))
            if gpu_uuid is not None
            else ("", ())
        )
        row = self.db.execute(
            f"SELECT id, started, results FROM benches {where} ORDER BY id DESC LIMIT 1", args
        ).fetchone()
        return {"id": row[0], "started": row[1], "results": json.loads(row[2])} if row else None

    def add_report(self, kind: str, command: list[str], report: Any) -> int:
        """A finished report of another kind than a run (a load test), kept in the runs table."""
        enc = msgspec.json.encode
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs(kind, command, started, ended, meta, findings, report) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    json.dumps(command),
                    report.started_s or time.time(),
                    report.ended_s or time.time(),
                    enc(getattr(report, "meta", {})).decode(),
                    enc(getattr(report, "findings", [])).decode(),
                    "",
                ),
            )
            rid = int(cur.lastrowid or 0)
            report.id = rid
            self.db.execute("UPDATE runs SET report = ? WHERE id = ?", (enc(report).decode(), rid))
        return rid

    def save_baseline(self, name: str, baseline: Any) -> None:
        """Keep a named baseline (replacing one of the same name)."""
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO baselines(name, created, baseline) VALUES (?, ?, ?)",
                (name, time.time(), msgspec.json.encode(baseline).decode()),
            )

    def baseline(self, name: str) -> str | None:
        """A named baseline's JSON, or None."""
        if "baselines" not in self._tables():
            return None
        row = self.db.execute("SELECT baseline FROM baselines WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else None

    def has_baselines(self) -> bool:
        return (
            "baselines" in self._tables() and self.db.execute("SELECT 1 FROM baselines LIMIT 1").fetchone() is not None
        )

    def samples(self, run_id: int) -> Iterator[Sample]:
        """The run's samples in time order; a damaged one is skipped (and counted in `skipped`)."""
        self.skipped = 0
        if not self._ready():
            return
        for (data,) in self.db.execute("SELECT data FROM samples WHERE run_id = ? ORDER BY t", (run_id,)):
            try:
                yield decode(data)
            except (msgspec.MsgspecError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
                self.skipped += 1


def _json(text: Any, default: Any) -> Any:
    """A JSON column, or `default` where it is empty or damaged."""
    if not text:
        return default
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return default

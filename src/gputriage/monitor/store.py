"""The run store: an embedded SQLite database in WAL mode.

Samples are written in batches (about one per second) in their own transactions, so a crash or a
kill -9 of gputriage loses at most the last batch and never touches earlier runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,            -- 'run' or 'watch'
    command TEXT NOT NULL,         -- JSON list of argv
    started REAL NOT NULL,         -- unix seconds
    ended REAL,                    -- NULL while running, or when gputriage died
    exit_code INTEGER,
    meta TEXT NOT NULL,            -- JSON: host, GPUs, driver, environment fingerprint
    verdict TEXT,                  -- JSON
    findings TEXT                  -- JSON list
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
"""


class StoreError(Exception):
    """The store cannot be opened or is not a gputriage store."""


def default_path() -> Path:
    env = os.environ.get("GPUTRIAGE_STORE")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("gputriage")) / "runs.sqlite"


class Store:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from None

    def close(self) -> None:
        self.db.close()

    def begin_run(self, kind: str, command: list[str], meta: dict[str, Any]) -> int:
        cur = self.db.execute("INSERT INTO runs(kind, command, started, meta) VALUES (?, ?, ?, ?)",
                              (kind, json.dumps(command), time.time(), json.dumps(meta, default=str)))
        return int(cur.lastrowid)

    def add_samples(self, run_id: int, samples: list[dict[str, Any]]) -> None:
        rows = [(run_id, s["t"], json.dumps(s, separators=(",", ":"))) for s in samples]
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO samples(run_id, t, data) VALUES (?, ?, ?)", rows)

    def end_run(self, run_id: int, exit_code: int | None, verdict: dict[str, Any] | None,
                findings: list[dict[str, Any]]) -> None:
        self.db.execute("UPDATE runs SET ended = ?, exit_code = ?, verdict = ?, findings = ? WHERE id = ?",
                        (time.time(), exit_code, json.dumps(verdict, default=str), json.dumps(findings, default=str),
                         run_id))

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT r.id, r.kind, r.command, r.started, r.ended, r.exit_code, r.verdict, "
                              "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id) FROM runs r "
                              "ORDER BY r.id DESC LIMIT ?", (limit,))
        out = []
        for rid, kind, cmd, started, ended, code, verdict, n in cur.fetchall():
            v = json.loads(verdict) if verdict else None
            out.append({"id": rid, "kind": kind, "command": json.loads(cmd), "started": started, "ended": ended,
                        "exit_code": code, "samples": n, "bottleneck": (v or {}).get("bottleneck"),
                        "complete": ended is not None})
        return out

    def run(self, run_id: int) -> dict[str, Any] | None:
        row = self.db.execute("SELECT id, kind, command, started, ended, exit_code, meta, verdict, findings "
                              "FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        rid, kind, cmd, started, ended, code, meta, verdict, findings = row
        return {"id": rid, "kind": kind, "command": json.loads(cmd), "started": started, "ended": ended,
                "exit_code": code, "meta": json.loads(meta), "verdict": json.loads(verdict) if verdict else None,
                "findings": json.loads(findings) if findings else [], "complete": ended is not None}

    def add_bench(self, machine: str, results: list[dict[str, Any]]) -> int:
        cur = self.db.execute("INSERT INTO benches(started, machine, results) VALUES (?, ?, ?)",
                              (time.time(), machine, json.dumps(results, default=str)))
        return int(cur.lastrowid)

    def last_bench(self, machine: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT id, started, results FROM benches WHERE machine = ? ORDER BY id DESC LIMIT 1",
                              (machine,)).fetchone()
        return {"id": row[0], "started": row[1], "results": json.loads(row[2])} if row else None

    def samples(self, run_id: int) -> Iterator[dict[str, Any]]:
        for (data,) in self.db.execute("SELECT data FROM samples WHERE run_id = ? ORDER BY t", (run_id,)):
            yield json.loads(data)

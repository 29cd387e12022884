"""Every fact of one machine at one time, as a schema-versioned JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from gputriage.model.fact import Fact
from gputriage.model.files import unreadable
from gputriage.model.reading import Reading, Unavailable

SNAPSHOT_SCHEMA = "gputriage.snapshot"
SNAPSHOT_VERSION = 1


class SnapshotError(Exception):
    """A snapshot file that cannot be used: missing, corrupt, foreign or from a newer version."""


@dataclass(frozen=True)
class Snapshot:
    facts: tuple[Fact, ...]
    taken_at: float  # unix seconds
    hostname: str = ""
    tool_version: str = ""
    raw: dict[str, Any] = field(default_factory=dict)  # the sources the facts were parsed from

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {f.name: f for f in self.facts})

    def fact(self, name: str) -> Fact | None:
        return self._index.get(name)  # type: ignore[attr-defined]

    def get(self, name: str) -> Reading:
        f = self.fact(name)
        return f.value if f is not None else Unavailable("not_found", f"no fact {name}")

    def names(self) -> Iterator[str]:
        return iter(self._index)  # type: ignore[attr-defined]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SNAPSHOT_SCHEMA,
            "version": SNAPSHOT_VERSION,
            "taken_at": self.taken_at,
            "hostname": self.hostname,
            "tool_version": self.tool_version,
            "facts": [f.to_json() for f in self.facts],
            "raw": self.raw,
        }

    def save(self, path: str | Path) -> None:
        """Write atomically: a crash never leaves a half-written snapshot in place."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, default=str))
        tmp.replace(path)

    @classmethod
    def from_json(cls, data: Any) -> Snapshot:
        if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA:
            raise SnapshotError("not a gputriage snapshot (no 'schema': 'gputriage.snapshot')")
        version = data.get("version")
        if not isinstance(version, int) or version > SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot version {version!r} is newer than this gputriage reads ({SNAPSHOT_VERSION})")
        try:
            facts = tuple(Fact.from_json(f) for f in data["facts"])
            return cls(
                facts=facts, taken_at=float(data.get("taken_at", 0.0)), hostname=str(data.get("hostname", "")),
                tool_version=str(data.get("tool_version", "")), raw=dict(data.get("raw") or {}),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"malformed snapshot: {type(exc).__name__}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        path = Path(path)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SnapshotError(unreadable(path, exc)) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"{path}: corrupt JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        try:
            return cls.from_json(data)
        except SnapshotError as exc:
            raise SnapshotError(f"{path}: {exc}") from None

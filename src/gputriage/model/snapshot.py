"""Every fact of one machine at one time, as a schema-versioned JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import msgspec

from gputriage.model.fact import Fact
from gputriage.model.fact_types import typed
from gputriage.model.files import unreadable
from gputriage.model.reading import Reading, Unavailable
from gputriage.model.safe_text import NAME_CHARS, safe_text, safe_tree

SNAPSHOT_SCHEMA = "gputriage.snapshot"
SNAPSHOT_VERSION = 1
MAX_SNAPSHOT_BYTES = 64 << 20  # a snapshot of 8 GPUs with its raw kernel log is a few MB
UnixTime = Annotated[float, msgspec.Meta(ge=0, le=32503680000)]  # 1970 to 3000: a date any clock can show


class _UnavailableFile(msgspec.Struct):
    reason: str
    detail: str = ""


class _FactFile(msgspec.Struct):
    name: str
    source: str = ""
    value: Any = None
    unavailable: Optional[_UnavailableFile] = None


class _SnapshotFile(msgspec.Struct):
    """The file as written: decoded typed, so a malformed one is one error, not a crash later."""

    schema: str
    version: int
    facts: list[_FactFile]
    taken_at: UnixTime = 0.0
    hostname: str = ""
    tool_version: str = ""
    raw: dict[str, Any] = {}


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

    def to_text(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)

    def save(self, path: str | Path) -> None:
        """Write atomically: a crash never leaves a half-written snapshot in place."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_text())
        tmp.replace(path)

    @classmethod
    def from_json(cls, data: Any) -> Snapshot:
        if not isinstance(data, dict) or data.get("schema") != SNAPSHOT_SCHEMA:
            raise SnapshotError("not a gputriage snapshot (no 'schema': 'gputriage.snapshot')")
        version = data.get("version")
        if not isinstance(version, int) or version > SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot version {version!r} is newer than this gputriage reads ({SNAPSHOT_VERSION})")
        try:
            return cls._typed(msgspec.convert(data, _SnapshotFile))
        except (msgspec.ValidationError, ValueError) as exc:
            raise SnapshotError(f"malformed snapshot: {exc}") from None

    @classmethod
    def _typed(cls, f: _SnapshotFile) -> Snapshot:
        """Each fact converted to its name's declared type and every string made safe to print (the raw
        sources are kept as read: nothing prints them)."""
        facts = []
        for x in f.facts:
            name = safe_text(x.name, NAME_CHARS)
            if x.unavailable is not None:
                value: Reading = Unavailable(x.unavailable.reason, safe_text(x.unavailable.detail))
            else:
                value = safe_tree(typed(name, x.value))
            facts.append(Fact(name, value, safe_text(x.source, NAME_CHARS)))
        return cls(
            facts=tuple(facts),
            taken_at=f.taken_at,
            hostname=safe_text(f.hostname, NAME_CHARS),
            tool_version=safe_text(f.tool_version, NAME_CHARS),
            raw=f.raw,
        )

    @classmethod
    def load(cls, path: str | Path) -> Snapshot:
        """Read a snapshot file (an attachment from anywhere: bounded in size, decoded typed); every
        problem is one SnapshotError naming the file."""
        path = Path(path)
        try:
            size = path.stat().st_size
            if size > MAX_SNAPSHOT_BYTES:
                raise SnapshotError(
                    f"{path}: {size / 2**20:.0f} MiB, larger than a snapshot can be ({MAX_SNAPSHOT_BYTES >> 20} MiB)"
                )
            data = path.read_bytes()
        except OSError as exc:
            raise SnapshotError(unreadable(path, exc)) from None
        try:
            head = msgspec.json.decode(data, type=dict[str, Any]) if data.lstrip()[:1] == b"{" else None
        except msgspec.ValidationError:
            head = None
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as exc:
            raise SnapshotError(f"{path}: corrupt JSON: {str(exc)[:200]}") from None
        if head is None:
            raise SnapshotError(f"{path}: not a gputriage snapshot (not a JSON object)")
        try:
            return cls.from_json(head)
        except RecursionError:
            raise SnapshotError(f"{path}: malformed snapshot: nested too deep") from None
        except SnapshotError as exc:
            raise SnapshotError(f"{path}: {str(exc)[:300]}") from None

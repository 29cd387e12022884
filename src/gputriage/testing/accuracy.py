"""The accuracy of the rules over every recorded case: the manifest of cases (`tests/fixtures/cases.toml`, each
with the cause it should get and why), each replayed through today's rules, and the outcome, right or wrong."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from gputriage.api import analyze_trace
from gputriage.api.memory import analyze_memory
from gputriage.diagnosis.memory.judge import CAUSES as MEMORY_CAUSES
from gputriage.diagnosis.serving.judge import findings as load_findings
from gputriage.model.bottleneck import Bottleneck
from gputriage.model.load import LoadReport
from gputriage.model.run import RunReport
from gputriage.testing.recordings import JUDGES, load_runs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport, a dependency of the package before 3.11
    import tomli as tomllib

KINDS = ("run", "trace", "load", "memory", "ranks")
RANK_FINDINGS = ("run.straggler", "run.rank_hang")  # a multi-rank run's findings about its ranks: ids starting so
NO_VERDICT = "none"  # a run expected to get no verdict (a command that failed before its steady state)
ORDER = [b.value for b in Bottleneck] + [NO_VERDICT]
SET_KINDS = ("load",)  # kinds whose answer is a set of finding ids; every other kind's answer is one cause
# the causes a kind's answer may name (a kind not listed takes any name)
VOCABULARY: dict[str, list[str]] = {"run": ORDER, "trace": ORDER}


class ManifestError(ValueError):
    """The manifest cannot be read, or one of its cases names what is not there."""


@dataclass(frozen=True)
class Case:
    """One recorded case and the cause it should get."""

    id: str
    kind: str  # run | trace | load | memory | ranks (a distributed job's run: the rank named, and why)
    fixture: str  # relative to the fixtures folder
    # a run's or a trace's bottleneck (one); a load's finding ids (any number); a memory snapshot's cause (one)
    expected: tuple[str, ...]
    why: str
    key: str | None = None  # a run's name in its fixture
    format: str = "store"  # a run's layout: store, untyped or stream
    absent: tuple[str, ...] = ()  # a load's finding ids that must not be raised
    findings: tuple[str, ...] = ()  # a run's findings that must be raised too
    docstring_said: str | None = None  # the cause committed to before the first run, where measurement differed
    line: str | None = None  # a memory snapshot's planted line ("f.py:42"): among its top three, or the one that asked
    rank: int | None = None  # a multi-rank run's planted rank: the subject of its expected finding

    @property
    def label(self) -> str:
        """What the case expects, as one row of the table."""
        if self.kind == "memory" and self.expected[0] == NO_VERDICT:
            return "memory: none"
        if self.kind == "ranks":
            return "ranks: " + (self.expected[0] if self.expected[0] != NO_VERDICT else "no straggler")
        if self.kind != "load":
            return self.expected[0]
        return "load: " + (" + ".join(self.expected) if self.expected else "no finding")


@dataclass(frozen=True)
class Outcome:
    case: Case
    got: str  # the bottleneck (or "none"); for a load, the finding ids raised
    right: bool
    notes: list[str] = field(default_factory=list)  # what made it wrong beyond the cause, or what was left open
    source: str = ""  # where the case comes from (`source_of`); empty: its kind
    left_open: tuple[str, ...] = ()  # the causes the verdict left open beside the one it named
    raised: tuple[str, ...] = ()  # a load's finding ids raised

    @property
    def where(self) -> str:
        return self.source or self.case.kind


def source_of(case: Case, rec: dict[str, Any] | None = None) -> str:
    """Where a case comes from: a run by the mode it was recorded in (read from the recording: GPM read or not, the
    profiler armed or not), else its kind."""
    if case.kind != "run" or rec is None:
        return case.kind
    if case.format != "store":
        return "run: earlier recordings"
    if rec.get("kind") == "watch":
        return "watch"
    gpus = (rec.get("meta") or {}).get("gpus") or {}
    if any(isinstance(g, dict) and g.get("gpm") is False for g in gpus.values()):
        return "run: --no-gpm"
    profile = rec.get("profile")
    if not isinstance(profile, dict):  # null, or recorded before runs were profiled
        return "run: --no-profile"
    return "run: --profile" if profile.get("mode", "on") == "on" else "run: default"


def sources(cases: list[Case], fixtures: Path) -> dict[str, str]:
    """Each case's source by id, reading the recordings (not judging them)."""
    loaded: dict[str, dict[str, Any]] = {}
    out = {}
    for case in cases:
        rec = None
        if case.kind == "run":
            if case.fixture not in loaded:
                path = fixtures / case.fixture
                if not path.exists():
                    raise ManifestError(f"{case.id}: no fixture {path}")
                loaded[case.fixture] = load_runs(path)
            rec = loaded[case.fixture].get(case.key or "")
        out[case.id] = source_of(case, rec)
    return out


def load_manifest(path: Path) -> list[Case]:
    """The cases of a manifest; ManifestError for a manifest that is not one."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"cannot read the manifest {path}: {exc}") from None
    cases, seen = [], set()
    for i, raw in enumerate(data.get("case", [])):
        try:
            case = _case(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError(f"{path}: case {i + 1} ({raw.get('id', '?')}): {exc}") from None
        if case.id in seen:
            raise ManifestError(f"{path}: the id {case.id} is given twice")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise ManifestError(f"{path} holds no [[case]]")
    return cases


def _case(raw: dict[str, Any]) -> Case:
    kind = raw["kind"]
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is none of {', '.join(KINDS)}")
    expected = raw["expected"]
    expected = tuple(expected) if isinstance(expected, list) else (expected,)
    if kind == "memory":
        if len(expected) != 1 or expected[0] not in (*MEMORY_CAUSES, NO_VERDICT):
            raise ValueError(f"expected {raw['expected']!r} is no cause of an out-of-memory error (nor {NO_VERDICT!r})")
    elif kind == "ranks":
        if len(expected) != 1 or not (expected[0] == NO_VERDICT or expected[0].startswith(RANK_FINDINGS)):
            raise ValueError(f"expected {raw['expected']!r} is no finding about ranks (nor {NO_VERDICT!r})")
        if not raw.get("key"):
            raise ValueError("a multi-rank run needs the key of its run in the fixture")
    elif kind != "load":
        if len(expected) != 1 or expected[0] not in ORDER:
            raise ValueError(f"expected {raw['expected']!r} is no bottleneck (nor {NO_VERDICT!r})")
        if kind == "run" and not raw.get("key"):
            raise ValueError("a run needs the key of its run in the fixture")
    if raw.get("format", "store") not in JUDGES:
        raise ValueError(f"format {raw['format']!r} is none of {', '.join(JUDGES)}")
    unknown = set(raw) - {
        "id",
        "kind",
        "fixture",
        "key",
        "format",
        "expected",
        "absent",
        "findings",
        "docstring_said",
        "why",
        "line",
        "rank",
    }
    if unknown:
        raise ValueError(f"unknown fields {', '.join(sorted(unknown))}")
    return Case(
        id=raw["id"],
        kind=kind,
        fixture=raw["fixture"],
        expected=expected,
        why=raw["why"],
        key=raw.get("key"),
        format=raw.get("format", "store"),
        absent=tuple(raw.get("absent", ())),
        findings=tuple(raw.get("findings", ())),
        docstring_said=raw.get("docstring_said"),
        line=raw.get("line"),
        rank=raw.get("rank"),
    )


def replay(cases: list[Case], fixtures: Path) -> list[Outcome]:
    """Every case judged again by today's rules, in the manifest's order."""
    loaded: dict[str, dict[str, Any]] = {}
    out = []
    for case in cases:
        path = fixtures / case.fixture
        if not path.exists():
            raise ManifestError(f"{case.id}: no fixture {path}")
        if case.kind in ("run", "ranks"):
            if case.fixture not in loaded:
                loaded[case.fixture] = load_runs(path)
            runs = loaded[case.fixture]
            if case.key not in runs:
                raise ManifestError(f"{case.id}: {case.fixture} holds no run {case.key!r}")
            rec = runs[case.key]
            judged = JUDGES[case.format](rec)
            out.append(
                _run_outcome(case, judged, source_of(case, rec)) if case.kind == "run" else _ranks_outcome(case, judged)
            )
        elif case.kind == "memory":
            out.append(_memory_outcome(case, path))
        elif case.kind == "trace":
            verdict = analyze_trace([path]).verdict
            got = verdict.bottleneck.value if verdict is not None and verdict.bottleneck is not None else NO_VERDICT
            out.append(Outcome(case, got, got == case.expected[0]))
        else:
            report = msgspec.json.decode(path.read_bytes(), type=LoadReport)
            out.append(_load_outcome(case, {f.id for f in load_findings(report.steps)}))
    return out


def _run_outcome(case: Case, report: RunReport, source: str = "") -> Outcome:
    b = report.verdict.bottleneck
    got = b.value if b is not None else NO_VERDICT
    raised = {f.id for f in report.findings} | {v.finding for v in report.verdict.per_gpu.values() if v.finding}
    notes = [f"{f} not raised" for f in case.findings if f not in raised]
    open_ = {u.value for v in report.verdict.per_gpu.values() for u in v.undecided_between} - {got}
    left_open = sorted(open_, key=ORDER.index)
    if got != case.expected[0] and case.expected[0] in left_open:
        notes.append(f"{case.expected[0]} left open")
    right = got == case.expected[0] and not any(n.endswith("not raised") for n in notes)
    return Outcome(case, got, right, notes, source=source, left_open=tuple(left_open))


def _ranks_outcome(case: Case, report: RunReport) -> Outcome:
    """The findings about the job's ranks: the expected one about the planted rank (its planted line among those it
    names), or none. The cause named is the expected finding's id where it is about the planted rank, else every
    finding about the ranks with its subject ("none": no such finding)."""
    about = [f for f in report.findings if f.id.startswith(RANK_FINDINGS)]
    said = " + ".join(sorted(f"{f.id} ({f.subject})" for f in about)) or NO_VERDICT
    if case.expected[0] == NO_VERDICT:
        return Outcome(case, said, not about, source="ranks")
    notes = []
    hit = [f for f in about if f.id == case.expected[0] and (case.rank is None or f.subject == f"rank.{case.rank}")]
    if hit and case.line is not None and not any(case.line in str(f.evidence) for f in hit):
        notes.append(f"{case.line} not named")
    got = case.expected[0] if hit else said
    return Outcome(case, got, bool(hit) and not notes, notes, source="ranks")


def _memory_outcome(case: Case, path: Path) -> Outcome:
    """The cause named, and the planted line among the top three lines (or the line that asked)."""
    report = analyze_memory(path)
    got = report.cause or NO_VERDICT
    notes = []
    if case.line is not None:
        s = report.state
        named = [f"{ln.file.rsplit('/', 1)[-1]}:{ln.line}" for ln in s.top_lines[:3]]
        if s.oom is not None and s.oom.line:
            named.append(s.oom.line.rsplit("/", 1)[-1])
        if case.line not in named:
            notes.append(f"{case.line} not among the top three lines")
    return Outcome(case, got, got == case.expected[0] and not notes, notes, source="memory")


def _load_outcome(case: Case, raised: set[str]) -> Outcome:
    notes = [f"{f} not raised" for f in case.expected if f not in raised]
    notes += [f"{f} raised" for f in case.absent if f in raised]
    got = " + ".join(sorted(raised)) if raised else "no finding"
    return Outcome(case, got, not notes, notes, raised=tuple(sorted(raised)))


def rows(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """The table by expected cause: cases, right, wrong, and what the wrong ones got."""
    by: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by.setdefault(o.case.label, []).append(o)

    def rank(label: str) -> tuple[int, str]:
        return (ORDER.index(label), label) if label in ORDER else (len(ORDER), label)

    table = []
    for label in sorted(by, key=rank):
        group = by[label]
        got: dict[str, int] = {}
        for o in group:
            if not o.right:
                right_cause = o.case.kind == "load" or o.got == o.case.expected[0]  # wrong by a finding, or a line
                said = "; ".join(o.notes) if right_cause else o.got
                got[said] = got.get(said, 0) + 1
        table.append(
            {
                "expected": label,
                "cases": len(group),
                "right": sum(o.right for o in group),
                "wrong": sum(not o.right for o in group),
                "wrong_got": dict(sorted(got.items(), key=lambda kv: (-kv[1], kv[0]))),
            }
        )
    return table


def totals(outcomes: list[Outcome]) -> dict[str, Any]:
    return {
        "cases": len(outcomes),
        "right": sum(o.right for o in outcomes),
        "by_kind": {
            k: {
                "cases": sum(o.case.kind == k for o in outcomes),
                "right": sum(o.right for o in outcomes if o.case.kind == k),
            }
            for k in KINDS
        },
    }


def as_json(outcomes: list[Outcome]) -> dict[str, Any]:
    return {
        **totals(outcomes),
        "by_expected": rows(outcomes),
        "outcomes": [
            {
                "id": o.case.id,
                "kind": o.case.kind,
                "source": o.where,
                "fixture": o.case.fixture,
                "key": o.case.key,
                "expected": list(o.case.expected) if o.case.kind == "load" else o.case.expected[0],
                "got": o.got,
                "right": o.right,
                "notes": o.notes,
                "left_open": list(o.left_open),
                "why": o.case.why,
            }
            for o in outcomes
        ],
    }


def load_baseline(path: Path) -> set[str]:
    """The ids of the cases that were right when the baseline was written."""
    try:
        return set(json.loads(path.read_text())["right"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"cannot read the accuracy baseline {path}: {exc}") from None


def baseline_json(outcomes: list[Outcome]) -> str:
    return json.dumps({"right": sorted(o.case.id for o in outcomes if o.right)}, indent=1) + "\n"


def regressions(outcomes: list[Outcome], right_before: set[str]) -> list[str]:
    """One line per case right in the baseline and wrong now (or gone from the manifest)."""
    now = {o.case.id: o for o in outcomes}
    lines = [f"{i}: in the accuracy baseline but not in the manifest" for i in sorted(right_before - set(now))]
    for o in outcomes:
        if o.case.id in right_before and not o.right:
            expected = ", ".join(o.case.expected) or "no finding"
            extra = f" ({'; '.join(o.notes)})" if o.notes else ""
            lines.append(f"{o.case.id} was right and is wrong: expected {expected}, got {o.got}{extra}")
    return lines

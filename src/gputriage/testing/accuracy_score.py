"""How well one tool's answers name the causes of the recorded cases: precision, recall and the confusion matrix per
source. The answers are ours (the replay's outcomes) or another tool's, read from a JSON file of case id → answer.

A case of a one-cause kind (run, trace) is answered by one cause, "none" (no verdict) included; it is right when that
is the cause expected. A case of a set kind (load) is answered by the finding ids raised; it is right when every
finding it expects is raised and none it must not. A case left out of an answers file is unanswered: never right,
a miss for the cause it expects, and no answer that counts against any cause's precision."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from gputriage.testing.accuracy import ORDER, SET_KINDS, VOCABULARY, Case, ManifestError, Outcome

UNANSWERED = "unanswered"


@dataclass(frozen=True)
class Answer:
    """One tool's answer to one case: a cause (one-cause kinds), or the finding ids raised (set kinds)."""

    cause: str = ""
    findings: tuple[str, ...] = ()
    left_open: tuple[str, ...] = ()  # the causes left open beside the one named (not counted as named)


@dataclass(frozen=True)
class Scored:
    case: Case
    source: str
    answer: Optional[Answer]  # None: not answered

    @property
    def named(self) -> str:
        """The cause named, or "unanswered"."""
        return UNANSWERED if self.answer is None else self.answer.cause

    @property
    def right(self) -> bool:
        if self.answer is None:
            return False
        if self.case.kind in SET_KINDS:
            raised = set(self.answer.findings)
            return set(self.case.expected) <= raised and not raised & set(self.case.absent)
        return self.answer.cause == self.case.expected[0]


def ours(outcomes: list[Outcome]) -> list[Scored]:
    """The replay's outcomes as answers: the cause each verdict named (a load: its findings)."""
    return [
        Scored(
            o.case,
            o.where,
            Answer(findings=o.raised) if o.case.kind in SET_KINDS else Answer(cause=o.got, left_open=o.left_open),
        )
        for o in outcomes
    ]


def exported(outcomes: list[Outcome]) -> dict[str, Any]:
    """Our answers as an answers file: case id → cause, {"cause", "left_open"} where alternatives were left open,
    or a load's list of finding ids."""
    out: dict[str, Any] = {}
    for s in ours(outcomes):
        assert s.answer is not None
        if s.case.kind in SET_KINDS:
            out[s.case.id] = list(s.answer.findings)
        elif s.answer.left_open:
            out[s.case.id] = {"cause": s.answer.cause, "left_open": list(s.answer.left_open)}
        else:
            out[s.case.id] = s.answer.cause
    return out


def read_answers(path: Path) -> dict[str, Any]:
    """An answers file: a JSON object of case id → answer; ManifestError for one that is not."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ManifestError(f"cannot read the answers {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: the answers are a JSON object of case id → cause, not {type(data).__name__}")
    return data


def _answer(case: Case, raw: Any) -> Answer:
    if case.kind in SET_KINDS:
        if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
            raise ValueError(f"a {case.kind} is answered by a list of finding ids, not {raw!r}")
        return Answer(findings=tuple(sorted(set(raw))))
    cause, left_open = raw, []
    if isinstance(raw, dict):
        cause, left_open = raw.get("cause"), raw.get("left_open", [])
        if set(raw) - {"cause", "left_open"}:
            raise ValueError(f"an answer object holds cause and left_open only, not {', '.join(sorted(raw))}")
    if not isinstance(cause, str) or not isinstance(left_open, list):
        raise ValueError(f"a {case.kind} is answered by a cause (or {{cause, left_open}}), not {raw!r}")
    vocabulary = VOCABULARY.get(case.kind)
    unknown = [c for c in [cause, *left_open] if not isinstance(c, str) or (vocabulary and c not in vocabulary)]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is no cause of a {case.kind} (one of {', '.join(vocabulary or [])})")
    return Answer(cause=cause, left_open=tuple(left_open))


def scored(cases: list[Case], where: dict[str, str], answers: dict[str, Any]) -> list[Scored]:
    """Another tool's answers against the cases (`where`: each case's source by id); a case not in `answers` is
    unanswered. ManifestError for an answer to no case, or one that is no answer of its case's kind."""
    ids = {c.id for c in cases}
    stray = sorted(set(answers) - ids)
    if stray:
        more = f" and {len(stray) - 3} more" if len(stray) > 3 else ""
        raise ManifestError(f"answers to no case of the manifest: {', '.join(stray[:3])}{more}")
    out = []
    for case in cases:
        try:
            answer = _answer(case, answers[case.id]) if case.id in answers else None
        except ValueError as exc:
            raise ManifestError(f"the answer to {case.id}: {exc}") from None
        out.append(Scored(case, where.get(case.id, case.kind), answer))
    return out


def always(cases: list[Case], where: dict[str, str], cause: str) -> list[Scored]:
    """What a tool that always names `cause` scores: every case whose kind's vocabulary holds that cause answered
    by it, every set case by no finding, the rest unanswered."""
    out = []
    for case in cases:
        answer: Optional[Answer] = Answer()
        if case.kind not in SET_KINDS:
            answer = Answer(cause=cause) if cause in VOCABULARY.get(case.kind, []) else None
        out.append(Scored(case, where.get(case.id, case.kind), answer))
    return out


# --- the tables --------------------------------------------------------------------------------------------------
def rank(label: str) -> tuple[int, str]:
    """The vocabulary's order, then other names alphabetically, "unanswered" last."""
    if label == UNANSWERED:
        return (len(ORDER) + 1, label)
    return (ORDER.index(label), label) if label in ORDER else (len(ORDER), label)


def ratio(part: int, whole: int) -> Optional[float]:
    return part / whole if whole else None


def f1(right: int, wrong_named: int, missed: int) -> Optional[float]:
    """2·right / (2·right + named wrongly + missed): the harmonic mean of precision and recall, 0 where either is 0
    or not defined (never named, never expected), not defined where nothing was expected nor named."""
    return ratio(2 * right, 2 * right + wrong_named + missed)


@dataclass(frozen=True)
class CauseRow:
    cause: str
    expected: int  # cases expecting it
    named: int  # cases answered with it
    right: int
    left_open: int  # cases expecting it, answered otherwise, with it left open

    @property
    def precision(self) -> Optional[float]:
        return ratio(self.right, self.named)

    @property
    def recall(self) -> Optional[float]:
        return ratio(self.right, self.expected)

    @property
    def f1(self) -> Optional[float]:
        return f1(self.right, self.named - self.right, self.expected - self.right)


def cause_rows(group: list[Scored]) -> list[CauseRow]:
    """One row per cause expected or named among the one-cause cases of `group`."""
    one = [s for s in group if s.case.kind not in SET_KINDS]
    labels = sorted({s.case.expected[0] for s in one} | {s.named for s in one} - {UNANSWERED}, key=rank)
    rows = []
    for label in labels:
        expecting = [s for s in one if s.case.expected[0] == label]
        rows.append(
            CauseRow(
                label,
                expected=len(expecting),
                named=sum(s.named == label for s in one),
                right=sum(s.named == label for s in expecting),
                left_open=sum(
                    s.named != label and s.answer is not None and label in s.answer.left_open for s in expecting
                ),
            )
        )
    return rows


@dataclass(frozen=True)
class Matrix:
    """Cases by the cause expected (rows) and the cause named (columns, "unanswered" last where any)."""

    rows: list[str]
    cols: list[str]
    counts: dict[tuple[str, str], int]


def confusion(group: list[Scored]) -> Matrix:
    one = [s for s in group if s.case.kind not in SET_KINDS]
    counts: dict[tuple[str, str], int] = {}
    for s in one:
        key = (s.case.expected[0], s.named)
        counts[key] = counts.get(key, 0) + 1
    rows = sorted({e for e, _ in counts}, key=rank)
    cols = sorted({e for e, _ in counts} | {a for _, a in counts}, key=rank)
    return Matrix(rows, cols, counts)


@dataclass(frozen=True)
class FindingRow:
    """One finding id over the set cases: where the truth asks for it, forbids it, or says nothing of it."""

    finding: str
    must: int  # cases that must raise it
    found: int  # ... and raised it
    must_not: int  # cases that must not raise it
    false_alarms: int  # ... and raised it
    unstated: int  # cases that raised it where the truth says nothing of it (not judged)

    @property
    def precision(self) -> Optional[float]:
        return ratio(self.found, self.found + self.false_alarms)

    @property
    def recall(self) -> Optional[float]:
        return ratio(self.found, self.must)

    @property
    def f1(self) -> Optional[float]:
        return f1(self.found, self.false_alarms, self.must - self.found)


def finding_rows(group: list[Scored]) -> list[FindingRow]:
    sets = [s for s in group if s.case.kind in SET_KINDS]
    raised = {s.case.id: set(s.answer.findings) if s.answer is not None else set() for s in sets}
    ids = sorted({f for s in sets for f in (*s.case.expected, *s.case.absent, *raised[s.case.id])})
    return [
        FindingRow(
            f,
            must=sum(f in s.case.expected for s in sets),
            found=sum(f in s.case.expected and f in raised[s.case.id] for s in sets),
            must_not=sum(f in s.case.absent for s in sets),
            false_alarms=sum(f in s.case.absent and f in raised[s.case.id] for s in sets),
            unstated=sum(f in raised[s.case.id] and f not in s.case.expected and f not in s.case.absent for s in sets),
        )
        for f in ids
    ]


@dataclass(frozen=True)
class Summary:
    """A group's cases, answers and right ones; for one-cause cases the macro averages: precision over the causes
    named, recall over the causes expected, F1 over both; for set cases, the judged findings summed (micro)."""

    cases: int
    answered: int
    right: int
    precision: Optional[float]
    recall: Optional[float]
    f1: Optional[float]

    @property
    def accuracy(self) -> Optional[float]:
        return ratio(self.right, self.cases)


def summary(group: list[Scored]) -> Summary:
    cases, answered, right = len(group), sum(s.answer is not None for s in group), sum(s.right for s in group)
    if group and all(s.case.kind in SET_KINDS for s in group):
        rows = finding_rows(group)
        found = sum(r.found for r in rows)
        alarms, must = sum(r.false_alarms for r in rows), sum(r.must for r in rows)
        return Summary(
            cases, answered, right, ratio(found, found + alarms), ratio(found, must), f1(found, alarms, must - found)
        )
    causes = cause_rows(group)
    return Summary(
        cases,
        answered,
        right,
        mean([c.precision for c in causes]),
        mean([c.recall for c in causes]),
        mean([c.f1 for c in causes]),
    )


def mean(xs: list[Optional[float]]) -> Optional[float]:
    """The mean of the values defined."""
    defined = [x for x in xs if x is not None]
    return sum(defined) / len(defined) if defined else None

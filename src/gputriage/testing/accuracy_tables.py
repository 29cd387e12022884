"""The accuracy tables written out, in Markdown (docs/accuracy.md) or plain text (the terminal): a summary per
source, precision and recall by cause, the confusion matrix, and precision and recall by finding."""

from __future__ import annotations

from typing import Optional

from gputriage.testing.accuracy import KINDS, ORDER, SET_KINDS, VOCABULARY
from gputriage.testing.accuracy_score import (
    UNANSWERED,
    Scored,
    cause_rows,
    confusion,
    finding_rows,
    summary,
)

# the sources in the order the page lists them, and what each is
SOURCES = {
    "run: default": "`gputriage run` as it runs by default: GPM read, the profiler armed (`--profile auto`: it "
    "profiles where the counters cannot decide)",
    "run: --profile": "`gputriage run --profile`: profiled once the run was steady",
    "run: --no-profile": "`gputriage run --no-profile`: GPM read, no profiler (and the runs recorded before runs "
    "were profiled by default)",
    "run: --no-gpm": "`gputriage run --no-gpm`, as on a GPU before Hopper: no SM activity, tensor pipes or DRAM "
    "bandwidth (the profiler armed or not)",
    "run: earlier recordings": "whole runs recorded in the sampler's first layouts: GPU counters at 10 Hz (and "
    "the host, for some), no profiler",
    "watch": "`gputriage watch` of a process it did not start: never profiled",
    "trace": "a profiler trace alone (`gputriage trace FILE`)",
    "load": "a load test's report (`gputriage load`): the findings raised over its steps",
}
PLURAL = {"run": "runs", "trace": "traces", "load": "load tests", "ranks": "multi-rank runs"}
BOTH = "runs and traces"  # the kinds named in the bottleneck vocabulary, together
DASH = "—"


def fmt(x: Optional[float]) -> str:
    return DASH if x is None else f"{x:.2f}"


def table(head: list[str], body: list[list[str]], md: bool, left: int = 1) -> list[str]:
    """A table; the first `left` columns aligned left, the rest right."""
    if md:
        rule = ["---"] * left + ["---:"] * (len(head) - left)
        return ["| " + " | ".join(r) + " |" for r in [head, rule, *body]]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    return [
        "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in [head, *body]
    ]


def _code(s: str, md: bool) -> str:
    return f"`{s}`" if md else s


def source_rank(source: str) -> tuple[int, str]:
    names = list(SOURCES)
    return (names.index(source), source) if source in names else (len(names), source)


def blocks(scored: list[Scored]) -> list[tuple[str, list[Scored]]]:
    """The groups scored, in the page's order: the run and trace kinds together, then each kind (all its sources
    when it has several, then each source)."""
    kinds = list(KINDS) + sorted({s.case.kind for s in scored} - set(KINDS))
    named = [k for k in kinds if VOCABULARY.get(k) is ORDER and any(s.case.kind == k for s in scored)]
    out: list[tuple[str, list[Scored]]] = []
    if len(named) > 1:
        out.append((BOTH, [s for s in scored if s.case.kind in named]))
    for kind in kinds:
        of_kind = [s for s in scored if s.case.kind == kind]
        where = sorted({s.source for s in of_kind}, key=source_rank)
        if len(where) > 1:
            out.append((f"all {PLURAL.get(kind, kind)}", of_kind))
        out += [(w, [s for s in of_kind if s.source == w]) for w in where]
    return out


def by_source(scored: list[Scored], md: bool) -> list[str]:
    """One row per block: cases, answered, right, accuracy, precision, recall and F1."""
    body = []
    for name, group in blocks(scored):
        s = summary(group)
        body.append(
            [
                f"**{name}**" if md and (name == BOTH or name.startswith("all ")) else _code(name, md),
                str(s.cases),
                str(s.answered),
                str(s.right),
                fmt(s.accuracy),
                fmt(s.precision),
                fmt(s.recall),
                fmt(s.f1),
            ]
        )
    head = ["source", "cases", "answered", "right", "accuracy", "precision", "recall", "F1"]
    return table(head, body, md)


def by_cause(group: list[Scored], md: bool) -> list[str]:
    rows = cause_rows(group)
    body = [
        [
            _code(r.cause, md),
            str(r.expected),
            str(r.named),
            str(r.right),
            fmt(r.precision),
            fmt(r.recall),
            fmt(r.f1),
            str(r.left_open or ""),
        ]
        for r in rows
    ]
    head = ["cause", "expected", "named", "right", "precision", "recall", "F1", "left open"]
    return table(head, body, md)


def short(label: str) -> str:
    """A column's name: the cause without `_bound`."""
    return label.removesuffix("_bound")


def matrix(group: list[Scored], md: bool) -> list[str]:
    """Rows: the cause expected; columns: the cause named (the diagonal: right). Text numbers the columns."""
    m = confusion(group)
    if md:
        head = ["expected ↓ named →", *(f"`{short(c)}`" if c != UNANSWERED else c for c in m.cols)]
    else:
        head = ["expected", *(str(i + 1) for i in range(len(m.cols)))]
    body = []
    for r in m.rows:
        cells = []
        for c in m.cols:
            n = m.counts.get((r, c), 0)
            cells.append("" if not n else f"**{n}**" if md and r == c else str(n))
        label = f"`{r}`" if md else f"{m.cols.index(r) + 1:>2} {r}"
        body.append([label, *cells])
    named_only = [
        f"{i + 1:>2} {c}" + ("" if c == UNANSWERED else " (named, never expected)")
        for i, c in enumerate(m.cols)
        if c not in m.rows and not md
    ]
    return table(head, body, md) + named_only


def by_finding(group: list[Scored], md: bool) -> list[str]:
    body = [
        [
            _code(r.finding, md),
            str(r.must),
            str(r.found),
            str(r.must_not),
            str(r.false_alarms),
            str(r.unstated),
            fmt(r.precision),
            fmt(r.recall),
            fmt(r.f1),
        ]
        for r in finding_rows(group)
    ]
    head = ["finding", "must raise", "found", "must not", "false alarms", "unstated, raised"]
    head += ["precision", "recall", "F1"]
    return table(head, body, md)


def block_tables(group: list[Scored], md: bool) -> list[str]:
    """A group's tables: by cause and the confusion matrix (one-cause kinds), by finding (set kinds)."""
    out: list[str] = []
    if any(s.case.kind not in SET_KINDS for s in group):
        out += [*by_cause(group, md), "", *matrix(group, md), ""]
    if any(s.case.kind in SET_KINDS for s in group):
        out += [*by_finding(group, md), ""]
    return out

"""The accuracy of the rules over every recorded case, written out: for the terminal, and the generated docs page
(docs/accuracy.md); the same tables for another tool's answers."""

from __future__ import annotations

from gputriage.model.bottleneck import Bottleneck
from gputriage.testing.accuracy import Outcome, totals
from gputriage.testing.accuracy_score import Scored, always, ours
from gputriage.testing.accuracy_tables import BOTH, SOURCES, block_tables, blocks, by_finding, by_source, matrix
from gputriage.testing.accuracy_tables import by_cause as cause_table

COMMAND = "python benchmarks/accuracy.py --markdown docs/accuracy.md"
PLURAL = {"memory": "memory snapshots", "ranks": "multi-rank runs"}
BASELINE_CAUSE = Bottleneck.compute_bound.value  # the cause most cases expect: what naming it always scores

COUNTED = [
    "- **Runs and traces**: each case expects one cause (`none`: a command that failed before its steady state, "
    "which gets no verdict) and its answer names one. It is right when the cause named is the one expected.",
    "- **Precision** of a cause: of the cases where it was named, the share that expected it. **Recall**: of the "
    "cases that expected it, the share where it was named. `—`: not defined there (the cause never named, or "
    "never expected).",
    "- `none` counts as a cause: a verdict withheld from a run that should get one is a miss for that run's "
    "cause, and a verdict withheld wrongly lowers `none`'s precision.",
    "- **Left open**: a run's verdict names one cause and may leave others open (what the counters could not "
    "tell apart). Only the cause named counts; the column counts the cases that expected a cause, named another "
    "and left the expected one open.",
    "- A case an answers file does not answer is **unanswered**: a miss for the recall of the cause it expects, "
    "counted against no cause's precision (the matrix's `unanswered` column).",
    "- **F1** of a cause = 2 right / (2 right + named wrongly + missed): 0 where it was expected and never named, "
    "or named and never expected.",
    "- A group's **accuracy** is right / cases; its precision, recall and F1 are macro averages, each cause "
    "weighing the same: precision over the causes named in the group, recall over the causes expected, F1 over "
    "both.",
    "- **Load tests**: a case lists the findings it must raise and those it must not; it is right when it raises "
    "all of the first and none of the second. By finding, precision = found / (found + false alarms), recall = "
    "found / must raise (found: raised where it must; false alarm: raised where it must not); a finding raised "
    "where the case says nothing of it is not judged (`unstated, raised`). The load group's precision, recall and "
    "F1 sum these over its findings.",
]


def _got(o: Outcome) -> str:
    return f"{o.case.id}: expected {', '.join(o.case.expected) or 'no finding'}, got {o.got}" + (
        f" ({'; '.join(o.notes)})" if o.notes else ""
    )


def summary_line(outcomes: list[Outcome]) -> str:
    t = totals(outcomes)
    kinds = ", ".join(f"{PLURAL.get(k, k + 's')} {v['right']}/{v['cases']}" for k, v in t["by_kind"].items())
    return f"Of {t['cases']} recorded cases, {t['right']} right ({kinds})."


def answered_line(scored: list[Scored], name: str) -> str:
    answered, right = sum(s.answer is not None for s in scored), sum(s.right for s in scored)
    return f"{name}: of {len(scored)} recorded cases, {answered} answered, {right} right."


def _terminal(scored: list[Scored]) -> list[str]:
    both = next((g for n, g in blocks(scored) if n == BOTH), [s for s in scored if s.case.kind in ("run", "trace")])
    out = ["by source:", *by_source(scored, md=False), ""]
    if both:
        out += [f"{BOTH}, by cause:", *cause_table(both, md=False), ""]
        out += [f"{BOTH}, expected (rows) against named (columns):", *matrix(both, md=False), ""]
    loads = [s for s in scored if s.case.kind == "load"]
    if loads:
        out += ["load tests, by finding:", *by_finding(loads, md=False), ""]
    return out


def text(outcomes: list[Outcome]) -> str:
    """Our tables by source, by cause and by finding, the wrong cases and the total, for a terminal."""
    out = _terminal(ours(outcomes))
    wrong = [o for o in outcomes if not o.right]
    if wrong:
        out += ["wrong:", *(f"  {_got(o)}" for o in wrong), ""]
    return "\n".join(out + [summary_line(outcomes)]) + "\n"


def answers_text(scored: list[Scored], name: str) -> str:
    """The same tables for another tool's answers."""
    return "\n".join(_terminal(scored) + [answered_line(scored, name)]) + "\n"


def _sections(scored: list[Scored]) -> list[str]:
    out = ["## By source", "", *by_source(scored, md=True), ""]
    out += [f"- `{name}`: {SOURCES[name]}" for name in dict(blocks(scored)) if name in SOURCES]
    out += ["", "## How it is counted", "", *COUNTED, ""]
    groups = blocks(scored)
    for name, group in groups:
        if name.startswith("all ") and groups[0][0] == BOTH:  # its rows are in the table of runs and traces
            continue
        out += [f"## {f'`{name}`' if name in SOURCES else name.capitalize()}", "", *block_tables(group, md=True)]
    return out


def markdown(outcomes: list[Outcome]) -> str:
    """docs/accuracy.md: by source, by cause with the confusion matrices, by finding; what always naming the
    commonest cause scores; the wrong cases; the expectations measurement revised."""
    mine = ours(outcomes)
    baseline = always([o.case for o in outcomes], {o.case.id: o.where for o in outcomes}, BASELINE_CAUSE)
    by_finding_only = sum(o.got == o.case.expected[0] and not o.right for o in outcomes if o.case.kind == "run")
    out = [
        "# Accuracy",
        "",
        "How often gputriage names the cause each recorded workload should get: every run, trace and load test "
        "recorded under `tests/fixtures` (on H200s, and load tests on a CPU), and every allocator snapshot of an "
        "out-of-memory error (`memory`: recorded on an H100, and those under `memory/built` built to PyTorch's "
        "documented snapshot format), replayed through today's rules and "
        "set against the cause written down for it in `tests/fixtures/cases.toml`, with one line of why. "
        "[The benchmark](benchmark.md) says what the cases are, where their truth comes from, and how to score "
        "another tool on them.",
        "",
        f"This page is generated by `{COMMAND}`; a test fails when it is stale, and CI fails when a case that "
        "was right goes wrong.",
        "",
        f"**{summary_line(outcomes)}**"
        + (
            f" That count also asks a run for the findings its case names (`findings`); {by_finding_only} "
            "name the right cause without one. The tables below count the cause alone."
            if by_finding_only
            else ""
        ),
        "",
        *_sections(mine),
        f"## A baseline: always `{BASELINE_CAUSE}`",
        "",
        f"What a tool scores that names `{BASELINE_CAUSE}`, the cause most cases expect, for every run and trace, "
        "and raises no finding on a load test:",
        "",
        *by_source(baseline, md=True),
        "",
        "## Wrong cases",
        "",
    ]
    wrong = [o for o in outcomes if not o.right]
    if not wrong:
        out += ["None.", ""]
    for o in wrong:
        notes = f" ({'; '.join(o.notes)})" if o.notes else ""
        out.append(
            f"- `{o.case.id}` ({o.where}): expected `{', '.join(o.case.expected) or 'no finding'}`, "
            f"got `{o.got}`{notes} — {o.case.why}"
        )
    revised = [o for o in outcomes if o.case.docstring_said]
    if revised:
        out += [
            "",
            "## Expectations that measurement revised",
            "",
            "Each of these workloads had its cause written down before its first run; what it measured (its "
            "trace, the allocator's counters) showed another, which is the one expected here.",
            "",
        ]
        for o in revised:
            out.append(
                f"- `{o.case.id}`: written as `{o.case.docstring_said}`, expected `{o.case.expected[0]}` — {o.case.why}"
            )
    return "\n".join(out) + "\n"


def answers_markdown(scored: list[Scored], name: str) -> str:
    """A page of the same tables for another tool's answers."""
    head = [f"# Accuracy of {name}", "", f"**{answered_line(scored, name)}**", ""]
    return "\n".join(head + _sections(scored)) + "\n"

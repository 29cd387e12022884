"""`rules --markdown`: the catalog as a Markdown page (the documentation's rules.md is this, generated)."""

from __future__ import annotations

import re

from gputriage.model.catalog import Catalog
from gputriage.model.finding import STEPS, FindingSpec, Threshold

_CODE = re.compile(r"(`[^`]*`)")  # code spans keep their text as written
_SPECIAL = re.compile(r"([\\*\[\]])")
_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what could open an HTML tag; "< 60%" stays as written


def _prose(text: str, *, in_table: bool = False) -> str:
    """Catalog prose as Markdown text: what Markdown would read as emphasis, a link or HTML is escaped outside
    code spans; in a table cell, a pipe too."""
    parts = []
    for i, part in enumerate(_CODE.split(text)):
        if i % 2 == 0:
            part = _TAG.sub("&lt;", _SPECIAL.sub(r"\\\1", part))
            part = re.sub(r"(?<!\w)_|_(?!\w)", r"\\_", part)
        if in_table:
            part = part.replace("|", "\\|")
        parts.append(part)
    return " ".join("".join(parts).split())


def _value(th: Threshold) -> str:
    unit = th.unit.strip()
    if not unit:
        return f"{th.value:g}"
    sep = "" if unit.startswith("%") else " "
    return f"{th.value:g}{sep}{_prose(unit, in_table=True)}"


def _section(spec: FindingSpec) -> list[str]:
    commands = ", ".join(f"`{c}`" for c in spec.commands)
    head = f"**{spec.severity.value}** · triage step {spec.step} ({STEPS.get(spec.step, '?')}) · reported by {commands}"
    lines = [
        f"## `{spec.id}`",
        "",
        head,
        "",
        f"**Symptom:** {_prose(spec.symptom)}",
        "",
        f"**Cause:** {_prose(spec.cause)}",
        "",
        f"**Decision:** {_prose(spec.decision)}",
        "",
    ]
    if spec.condition:
        lines += [f"**When:** {_prose(spec.condition)}", ""]
    if spec.needs:
        lines += [f"**Needs:** {', '.join(_prose(n) for n in spec.needs)}", ""]
    if spec.thresholds:
        lines += ["| threshold | value | meaning | source |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{th.name}` | {_value(th)} | {_prose(th.meaning, in_table=True)} | {_prose(th.source, in_table=True)} |"
            for th in spec.thresholds
        ]
        lines.append("")
    return lines


def rules_markdown(catalog: Catalog) -> str:
    """One section per finding id: severity, triage step, symptom, cause, decision, when it fires, what it needs
    to be seen, and its thresholds with their meaning and source."""
    steps = ", ".join(f"{n}. {title}" for n, title in STEPS.items())
    lines = [
        "# Rules",
        "",
        f"Every finding a gputriage command can report: {len(catalog.rules)} findings, each with its default "
        "severity, its triage step, what it looks like, what it means, what to do, when it fires and the "
        "numbers it rests on. Every finding in every report is made from one of these entries, so an id seen "
        "in a report can be looked up here or with `gputriage rules ID`.",
        "",
        f"The triage steps, in the order reports show them: {steps}.",
        "",
        "This page is generated from the catalog: `gputriage rules --markdown > docs/rules.md`.",
        "",
    ]
    for spec in catalog.rules:
        lines += _section(spec)
    return "\n".join(lines).rstrip("\n") + "\n"

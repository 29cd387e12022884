"""Colours and words shared by the terminal renderers."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gputriage.model.finding import Finding, Severity
from gputriage.model.reading import Unavailable

SEVERITY_STYLE = {Severity.ok: "green", Severity.info: "cyan", Severity.warn: "yellow", Severity.critical: "bold red"}
SEVERITY_LABEL = {Severity.ok: "OK", Severity.info: "INFO", Severity.warn: "WARN", Severity.critical: "CRIT"}


def show(value: Any, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, Unavailable):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def evidence_text(evidence: dict[str, Any]) -> str:
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = f"{value:g}"
        elif isinstance(value, list) and len(value) > 6:
            value = f"[{', '.join(map(str, value[:6]))}, … {len(value)} items]"
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def finding_text(f: Finding, why: bool = True) -> Text:
    """A finding as the terminal shows it: badge, symptom and id, then why, do and evidence."""
    t = Text()
    t.append(f" {SEVERITY_LABEL[f.severity]:4} ", style=f"reverse {SEVERITY_STYLE[f.severity]}")
    t.append(f" {f.symptom}", style="bold")
    t.append(f"  [{f.id}{' · ' + f.subject if f.subject else ''}]\n", style="dim")
    if why:
        t.append("       why: ", style="dim")
        t.append(f.cause + "\n")
    t.append("        do: ", style="dim")
    t.append(f.decision, style="green")
    if f.evidence:
        t.append("\n  evidence: ", style="dim")
        t.append(evidence_text(f.evidence), style="cyan")
    return t

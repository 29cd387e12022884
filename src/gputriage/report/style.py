"""Colours and words shared by the terminal renderers."""

from __future__ import annotations

from typing import Any

from gputriage.model.finding import Severity
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

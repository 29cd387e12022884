"""Colours, words and layouts shared by the terminal renderers."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from gputriage.model.finding import Finding, Severity
from gputriage.model.reading import Unavailable

SEVERITY_STYLE = {Severity.ok: "green", Severity.info: "cyan", Severity.warn: "yellow", Severity.critical: "bold red"}
SEVERITY_LABEL = {Severity.ok: "OK", Severity.info: "INFO", Severity.warn: "WARN", Severity.critical: "CRIT"}


MAX_FIELD = 80  # a value read from a file (a snapshot is an attachment from anywhere) is shown this long at most


def clip(text: str, limit: int = MAX_FIELD) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show(value: Any, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, Unavailable):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return clip(f"{value}{unit}")


def plain(value: Any, depth: int = 0) -> str:
    """A value as a person reads it: no Python spellings (None, True, quotes, nested parentheses)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, dict):
        if depth > 1:
            return "{…}"
        return "{" + ", ".join(f"{k}={plain(v, depth + 1)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        items = [plain(v, depth + 1) for v in value[:6]]
        more = f", … {len(value)} in all" if len(value) > 6 else ""
        return "[" + ", ".join(items) + more + "]"
    return str(value)


def evidence_text(evidence: dict[str, Any], limit: int = 400) -> str:
    text = ", ".join(f"{key}={plain(value)}" for key, value in evidence.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finding_text(f: Finding, why: bool = True) -> Table:
    """A finding as the terminal shows it: badge and symptom (its id and subject after), then why, do and
    the evidence, each label in a column of its own so wrapped lines keep their indent."""
    t = Table.grid(padding=(0, 1))
    t.add_column(justify="right", no_wrap=True, width=9)
    t.add_column(overflow="fold")
    head = Tagged(f.symptom, f"[{f.id}{' · ' + f.subject if f.subject else ''}]")
    t.add_row(Text(f" {SEVERITY_LABEL[f.severity]} ", style=f"reverse {SEVERITY_STYLE[f.severity]}"), head)
    if why:
        t.add_row(Text("why:", style="dim"), Text(f.cause))
    t.add_row(Text("do:", style="dim"), Text(f.decision, style="green"))
    if f.impact is not None:
        t.add_row(Text("gain:", style="dim"), Text(f"up to {f.impact:.0%} of the GPU's time (estimated)"))
    if f.verify:
        t.add_row(Text("verify:", style="dim"), Text(f.verify, style="bold"))
    if f.evidence:
        t.add_row(Text("evidence:", style="dim"), Text(evidence_text(f.evidence), style="cyan"))
    return t


class Tagged:
    """A bold text with a dim tag after it (a finding's symptom and its [id · subject]). Wrapped, the tag stays
    whole on the line of the text's last word: where it would fall on a line of its own, or break, that word
    goes down with it."""

    def __init__(self, text: str, tag: str) -> None:
        self.text, self.tag = text, tag

    def lines(self, console: Console, width: int) -> Text:
        whole = Text(self.text, style="bold")
        whole.append(f"  {self.tag}", style="dim")
        words = self.text.rsplit(" ", 1)
        if len(words) < 2 or whole.wrap(console, width)[-1].plain.rstrip().endswith(f"{words[1]}  {self.tag}"):
            return whole  # the tag whole, on the line of the text's last word
        out = Text(words[0] + "\n", style="bold")
        out.append(words[1], style="bold")
        out.append(f"  {self.tag}", style="dim")
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.lines(console, options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.lines(console, options.max_width))


def hanging(label: str, text: str | Text, style: str = "", mark_style: str | None = None) -> Table:
    """`label` then `text`, the text's wrapped lines indented under its first (a note, a checklist item);
    `mark_style`: the label's own style (default: the text's)."""
    t = Table.grid()
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row(
        Text(label, style=style if mark_style is None else mark_style),
        text if isinstance(text, Text) else Text(text, style=style),
    )
    return t


def indented(text: str | Text, indent: int = 2, style: str = "") -> Padding:
    """A paragraph whose every line, wrapped ones included, starts `indent` columns in."""
    return Padding(text if isinstance(text, Text) else Text(text, style=style), (0, 0, 0, indent))


def local_time(unix_s: float | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A unix time as this machine's local time; '?' for none, or one no calendar holds (a file says -1e20)."""
    if not unix_s:
        return "?"
    try:
        return dt.datetime.fromtimestamp(unix_s).astimezone().strftime(fmt)
    except (OverflowError, OSError, ValueError):
        return "?"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 kernel', '2 kernels', '1,024 gaps' (`many`: the plural when it is not word + s)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def figure_text(f: Any) -> str:
    """A baseline figure: its median, and its spread when several runs make one."""
    if f is None:
        return "—"
    if f.runs == 1 or f.low == f.high:
        return f"{f.median:,.4g}"
    return f"{f.median:,.4g} ({f.low:,.4g}–{f.high:,.4g}, {f.runs} runs)"

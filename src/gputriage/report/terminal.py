"""What every terminal renderer's output goes through on its way out: no control characters from the data
(only the console's own styles and cursor moves), no spaces at the ends of lines.

Strings read from a file, a server or a node are made safe where they are decoded (`model.safe_text`); this
is the last guard, for any that a renderer takes from elsewhere (a live process's name, a server's error)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

from gputriage.model.safe_text import has_control, safe_text


class Printable:
    """A renderable printed without control characters in its text and without trailing spaces."""

    def __init__(self, renderable: ConsoleRenderable) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        return clean_lines(console.render(self.renderable, options))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class PrintableHook(RenderHook):
    """Wraps everything a console prints in `Printable`."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [r if isinstance(r, Printable) else Printable(r) for r in renderables]


def console(**options: Any) -> Console:
    """A rich Console whose output is `Printable` (what the CLI prints through)."""
    c = Console(**options)
    c.push_render_hook(PrintableHook())
    return c


def clean_lines(segments: Iterable[Segment]) -> Iterator[Segment]:
    """The segments with control characters replaced in their text and each line's trailing spaces dropped
    (a space that shows a background colour stays)."""
    line: list[Segment] = []
    for segment in segments:
        if segment.control is not None:
            yield from line  # the console's own cursor moves: what came before stays as it was
            line = []
            yield segment
            continue
        text = segment.text
        if has_control(text.replace("\n", "")):
            text = safe_text(text, len(text) + 1, newline="\n")
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                yield from _rstrip(line)
                yield Segment.line()
                line = []
            if part:
                line.append(Segment(part, segment.style))
    yield from line


def _shows_background(style: Style | None) -> bool:
    return style is not None and (style.bgcolor is not None or bool(style.reverse))


def _rstrip(line: list[Segment]) -> list[Segment]:
    while line and not _shows_background(line[-1].style):
        text = line[-1].text.rstrip(" ")
        if text:
            line[-1] = Segment(text, line[-1].style)
            break
        line.pop()
    return line

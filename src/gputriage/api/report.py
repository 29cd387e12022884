"""`report`: a stored run, a profiler trace, a bench, a check, a checklist or a diff as one HTML page."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Sequence

import msgspec

from gputriage.api._common import GputriageError, UsageError, stored_report
from gputriage.api.check import check
from gputriage.api.load import show_load, stored_kind
from gputriage.api.memory import analyze_memory
from gputriage.api.run import show
from gputriage.api.trace import analyze_trace
from gputriage.model.baseline import Diff
from gputriage.model.bench import BenchReport
from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport
from gputriage.model.fact_types import typed
from gputriage.model.fleet import FleetReport
from gputriage.model.load import LoadReport
from gputriage.model.memory import MemoryReport
from gputriage.model.run import RunReport
from gputriage.model.safe_text import KERNEL_CHARS, safe_tree
from gputriage.model.trace import TraceReport
from gputriage.report.html import Reportable, render_html
from gputriage.trace.files import read_salvaged

SCHEMA_HEAD = re.compile(rb'^\s*\{\s*"schema"\s*:\s*"gputriage\.(\w+)"')


def _head(path: Path, size: int = 256) -> bytes:
    """The file's first bytes (inflated when gzip: as much as could be, the file may be cut or corrupt)."""
    return read_salvaged(path, size)[0]


def _decode(path: Path, kind: str) -> Reportable:
    """A report gputriage wrote with --json (plain or gzipped), back into its model."""
    types: dict[str, type] = {
        "run": RunReport,
        "trace": TraceReport,
        "bench": BenchReport,
        "check": CheckReport,
        "checklist": ChecklistReport,
        "diff": Diff,
        "load": LoadReport,
        "fleet": FleetReport,
        "memory": MemoryReport,
    }
    if kind not in types:
        raise GputriageError(
            f"{path}: a gputriage {kind} file has no HTML report (run, trace, bench, check, "
            "checklist, diff, load, fleet, memory and snapshot files do)"
        )
    try:
        data, problem = read_salvaged(path)
    except OSError as exc:
        raise GputriageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if problem is not None:
        raise GputriageError(f"{path}: not a readable gzip file ({problem})")
    try:  # every string made safe to print and bounded: a report file is an attachment from anywhere
        report: Reportable = msgspec.convert(
            safe_tree(msgspec.json.decode(data), KERNEL_CHARS, newline="\n"), types[kind]
        )
    except (msgspec.MsgspecError, RecursionError) as exc:
        raise GputriageError(f"{path}: not a readable gputriage {kind} report ({str(exc)[:300]})") from None
    if isinstance(report, CheckReport):  # its facts are a snapshot's: each of its declared type, as when one is read
        try:
            report.facts = {
                name: value if isinstance(value, dict) and set(value) == {"unavailable"} else typed(name, value)
                for name, value in report.facts.items()
            }
        except ValueError as exc:
            raise GputriageError(f"{path}: not a readable gputriage check report ({exc})") from None
    return report


def load_report(targets: Sequence[str], store: str | Path | None = None) -> Reportable:
    """What `targets` name: a run's id in the store; `check` (this machine, now); a file that gputriage
    wrote with --json (run, trace, bench, check, checklist, diff) or a snapshot; else profiler traces."""
    if not targets:
        raise UsageError("name what to report: a run's id, `check`, a trace file or a --json file")
    first = targets[0]
    if len(targets) == 1 and first.isdigit():
        kind = stored_kind(int(first), store)
        if kind == "fleet":
            fleet: FleetReport = stored_report(int(first), "fleet", FleetReport, store)
            return fleet
        return show_load(int(first), store) if kind == "load" else show(int(first), store)
    if len(targets) == 1 and first == "check" and not Path(first).exists():
        return check()
    paths = [Path(t) for t in targets]
    for p in paths:
        if not p.is_file():
            raise GputriageError(f"{p}: no such file" + ("" if p.exists() else " (a run is named by its number)"))
    try:
        m = SCHEMA_HEAD.match(_head(paths[0]))
    except OSError as exc:
        raise GputriageError(f"{paths[0]}: {exc.strerror or exc}") from None
    if m is not None:
        if len(paths) > 1:
            raise UsageError("one gputriage report file at a time (several files are read as one trace per rank)")
        kind = m.group(1).decode()
        return check(paths[0]) if kind == "snapshot" else _decode(paths[0], kind)
    if len(paths) == 1 and _is_pickle(paths[0]):  # an allocator snapshot (torch.cuda.memory._dump_snapshot)
        return analyze_memory(paths[0], bounded=True)
    return analyze_trace(paths)


def _is_pickle(path: Path) -> bool:
    """A pickle of protocol 2 or later (what `_dump_snapshot` writes), plain or gzipped."""
    head = _head(path, 2)
    return head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")


def write_html(report: Reportable, output: str | Path) -> Path:
    """The page, written whole or not at all (a temporary file renamed over `output`)."""
    out = Path(output)
    text = render_html(report)
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise GputriageError(f"{folder}: no such folder for the report")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".gputriage-report-", suffix=".html", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as any file the user writes, not mkstemp's 0600
        os.replace(tmp, out)
    except OSError as exc:
        raise GputriageError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
    return out


def report(targets: Sequence[str], output: str | Path, store: str | Path | None = None) -> Path:
    """`gputriage report TARGET... -o FILE`: the page written to FILE."""
    return write_html(load_report(targets, store), output)

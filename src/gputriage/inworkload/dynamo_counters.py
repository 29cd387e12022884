"""What `torch.compile` did in a Python workload under `gputriage run`: frames compiled, graph breaks (why and
where), recompilations and the time spent compiling, from dynamo's own counters.

The graph compiler fails silently: a data-dependent branch, a `.item()` or a Python call it cannot trace splits
the graph and the code around the break runs eagerly; a shape that changes under `dynamic=False` recompiles
the function, seconds each time, until the cache limit makes it run eagerly for good. No error says so.

Loaded into the workload with the profiler's hook (`trace.inject`), a daemon thread looks once a second whether
the workload has imported dynamo (it never imports it itself: that costs seconds), then copies its counters into
a small JSON file of its own in the folder `run` gave it (`dynamo.PID.json`, replaced atomically), and once more
at exit. The sampler reads it at the end of the run (`sampling.compile_report`). Standard library only, and
torch as the workload imported it; everything read is private to torch and read defensively: a torch that lacks
a counter reports without it.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading
from typing import Any, Optional

DIR_ENV = "GPUTRIAGE_PROGRESS_DIR"
PREFIX = "dynamo."
PERIOD_S = 1.0
MAX_ITEMS = 8  # reasons and sites kept, most frequent first
MAX_TEXT = 200  # characters of a reason kept
_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<function>.+)_at_(?P<line>\d+)$")


def _user_code(code: Any) -> bool:
    """A code object of the workload's (not torch's own, which dynamo also records)."""
    path = getattr(code, "co_filename", "") or ""
    return not (f"{os.sep}torch{os.sep}" in path or path.startswith("<frozen"))


def read(utils: Any, convert_frame: Any = None) -> dict[str, Any]:
    """Dynamo's counters as one report: graph breaks by reason and by place, frames compiled and recompiled,
    seconds compiling."""
    counters = getattr(utils, "counters", {})
    frames = dict(counters.get("frames", {}))
    breaks = dict(counters.get("graph_break", {}))
    resumes = dict(counters.get("resumes", {}))
    reasons = sorted(breaks.items(), key=lambda kv: -kv[1])[:MAX_ITEMS]
    seen = getattr(getattr(convert_frame, "input_codes", None), "seen", None)
    codes = [c for c in (ref() for ref in seen or ()) if c is not None and _user_code(c)]
    files = {c.co_name: c.co_filename for c in codes}
    sites = []
    for name, count in sorted(resumes.items(), key=lambda kv: -kv[1])[:MAX_ITEMS]:
        m = _RESUME.match(name)
        if m:
            sites.append(
                {"function": m["function"], "line": int(m["line"]), "count": int(count), "file": files.get(name, "")}
            )
    out: dict[str, Any] = {
        "frames_compiled": int(frames.get("total", 0)),
        "graph_breaks": int(sum(breaks.values())),
        "unique_graphs": int(dict(counters.get("stats", {})).get("unique_graphs", 0)),
        "break_reasons": [{"reason": str(r).strip().split("\n")[0][:MAX_TEXT], "count": int(c)} for r, c in reasons],
        "break_sites": sites,
    }
    metrics = getattr(utils, "compilation_time_metrics", None) or {}
    compiled = metrics.get("_compile.compile_inner")
    if compiled:
        out["compile_s"] = round(float(sum(compiled)), 3)
    if codes:
        out["recompiles"] = max(0, out["frames_compiled"] - len(codes))
        out["compiled_functions"] = [
            {"function": c.co_name, "file": c.co_filename, "line": c.co_firstlineno}
            for c in codes
            if not _RESUME.match(c.co_name)
        ][:MAX_ITEMS]
    return out


def write(folder: str, report: dict[str, Any]) -> None:
    """Replace this process's report (a reader never sees half a file)."""
    path = os.path.join(folder, f"{PREFIX}{os.getpid()}.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


def _snapshot(folder: str) -> bool:
    """Write the report if the workload has used dynamo; whether it has."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return False
    report = read(utils, sys.modules.get("torch._dynamo.convert_frame"))
    if report["frames_compiled"] == 0:
        return False
    write(folder, report)
    return True


def _safe_snapshot(folder: str) -> None:
    try:
        _snapshot(folder)
    except Exception:
        pass  # a counter this torch does not have, a folder gone: report nothing


def watch(folder: str, period_s: float = PERIOD_S, stop: Optional[threading.Event] = None) -> None:
    """The thread: a look a second (a dict lookup while dynamo is not imported), a last one at exit."""
    until = stop or threading.Event()
    if stop is None:
        atexit.register(_safe_snapshot, folder)
    while not until.wait(period_s):
        _safe_snapshot(folder)
    _safe_snapshot(folder)


def start(folder: str, stop: Optional[threading.Event] = None) -> threading.Thread:
    t = threading.Thread(target=watch, args=(folder,), kwargs={"stop": stop}, name="gputriage-dynamo", daemon=True)
    t.start()
    return t


def main() -> Optional[threading.Thread]:
    """Start the thread in this interpreter (what the injected `sitecustomize` calls)."""
    folder = os.environ.get(DIR_ENV)
    return start(folder) if folder else None

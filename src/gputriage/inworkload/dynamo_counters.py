"""What `torch.compile` did in a Python workload under `gputriage run`, from dynamo's own records: functions compiled
and recompiled (with the guard that failed), graph breaks (why and where: a `.item()` or a branch on data splits the
graph and runs the code around it eagerly), the functions dynamo gave up on (a break inside a loop, the recompile
limit: they run eagerly) and the seconds spent compiling. The graph compiler fails silently; this says so.

Loaded into the workload with the profiler's hook (`trace.inject`), a daemon thread looks whether the workload has
imported torch (ten times a second until it has, then once a second) and dynamo (it never imports either itself:
that costs seconds). Once torch is imported, dynamo is told to run gputriage's own frames as they are (a gc
callback, a module hook, a signal handler that fire while compiled code runs would otherwise be compiled as the
workload's). Once dynamo is imported, its counters and its record of each compilation (torch keeps the last 64:
they are tallied at each look) go into a small JSON file of this process's in the folder `run` gave it
(`dynamo.PID.json`, replaced atomically) when they changed, and once more at exit, after the workload's own exit
handlers; `sampling.compile_report` reads it. Standard library only; everything read is private to torch and read
defensively: a torch that lacks a record reports without it."""

from __future__ import annotations

import atexit
import json
import os
import re
import sys
import threading
from types import CodeType, ModuleType
from typing import Any, Callable, Iterable, Optional

DIR_ENV = "GPUTRIAGE_PROGRESS_DIR"
PREFIX = "dynamo."
PERIOD_S = 1.0
TORCH_WAIT_S = 0.1  # the look for torch until it is imported: gputriage's frames are skipped before anything compiles
MAX_ITEMS = 8  # reasons, sites and functions kept, most frequent first
MAX_TEXT = 200  # characters of a reason kept
MAX_RECORDS = 65536  # compilations tallied (by compile id) in one process
_RESUME = re.compile(r"torch_dynamo_resume_in_(?P<function>.+)_at_(?P<line>\d+)$")
_COMPILE_ID = re.compile(r"^\s*\[?!?[\d/]+\]?:\s*")  # "0/6: " before a recompile reason
_LOOP = re.compile(r"graph break in (?:a )?(?:for/while )?loop", re.I)
_LIMIT = re.compile(r"recompile.?limit|cache.?size.?limit", re.I)
LOOP_BREAK = "a graph break inside a loop"
RECOMPILE_LIMIT = "the recompile limit"
_HERE = os.path.dirname(os.path.dirname(__file__))  # gputriage's package, however this file was loaded
OWN_DIRS = tuple({os.path.abspath(_HERE) + os.sep, os.path.realpath(_HERE) + os.sep})
_TORCH = f"{os.sep}torch{os.sep}"


def own_file(path: str) -> bool:
    """A file of gputriage's (its frames are no part of the workload's compile report)."""
    return bool(path) and path.startswith(OWN_DIRS)


def _text(s: Any) -> str:
    """The first line of one of dynamo's messages, whitespace collapsed and cut."""
    return " ".join(str(s or "").strip().split("\n")[0].split())[:MAX_TEXT]


def _guard(reason: str) -> str:
    """The guard that failed, from dynamo's recompile reason: `0/3: ___stack0 == 0.0012  # if x.item() > 1:  #
    model.py:12 in forward` as `___stack0 == 0.0012 # if x.item() > 1:` (the place is known otherwise)."""
    return " # ".join(re.split(r"\s+#\s+", _text(_COMPILE_ID.sub("", reason)))[:2])


def _ready(module: Any, loading: bool = True) -> bool:
    """A module imported, not half-imported (`loading`: what to assume of one loaded by hand, as `run` loads
    gputriage's: its spec never says)."""
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", loading)


# --- gputriage's frames, left alone by dynamo -------------------------------------------------------------------
def skipper() -> Optional[Callable[[CodeType], None]]:
    """torch's way to have dynamo run a code object's frames as they are, never compiled (what they call is still
    seen; tracing into them from compiled code is unaffected: the hooks return at once while compiling), as torch's
    C extension offers it from `import torch` on, before the workload compiles anything."""
    torch = sys.modules.get("torch")
    if not _ready(torch):
        return None
    ef = getattr(getattr(getattr(torch, "_C", None), "_dynamo", None), "eval_frame", None)
    set_strategy = getattr(ef, "set_code_exec_strategy", None)
    strategy, action = getattr(ef, "_FrameExecStrategy", None), getattr(ef, "_FrameAction", None)
    if set_strategy is not None and strategy is not None and action is not None:  # torch >= 2.6
        return lambda code: set_strategy(code, strategy(action.SKIP, action.DEFAULT))
    dynamo = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(ef, "skip_code", None) or (getattr(dynamo, "skip_code", None) if _ready(dynamo) else None)


def module_codes(module: ModuleType) -> list[CodeType]:
    """Every code object a module defines: its functions, its classes' methods, and what they nest (closures,
    lambdas, comprehensions)."""
    name = module.__name__
    objects: list[Any] = []
    for obj in list(vars(module).values()):
        if isinstance(obj, ModuleType):  # an import (whose own attribute lookups may do anything)
            continue
        if isinstance(obj, type) and obj.__module__ == name:
            objects += list(vars(obj).values())
        else:
            objects.append(obj)
    stack: list[CodeType] = []
    for obj in objects:
        obj = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj  # static, class methods, properties
        code = getattr(obj, "__code__", None)
        if isinstance(code, CodeType) and own_file(code.co_filename):
            stack.append(code)
    out: dict[int, CodeType] = {}
    while stack:
        code = stack.pop()
        if id(code) not in out:
            out[id(code)] = code
            stack += [c for c in code.co_consts if isinstance(c, CodeType)]
    return list(out.values())


def skip_module(name: str) -> None:
    """Have dynamo skip one of gputriage's modules now (its hooks run in the workload's calls before the watcher's
    next pass)."""
    skip, module = skipper(), sys.modules.get(name)
    if skip is not None and module is not None:
        _skip_codes(skip, module)


def _skip_codes(skip: Callable[[CodeType], None], module: ModuleType) -> int:
    """Skip every code object of one of gputriage's modules (`module_codes` keeps only gputriage's files); how many."""
    codes = module_codes(module)
    for code in codes:
        skip(code)
    return len(codes)


class OwnFrames:
    """gputriage's modules loaded in this process, each skipped by dynamo once (and those imported later)."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.modules_seen = -1  # len(sys.modules) at the last look: no new module, nothing to do

    def skip(self) -> int:
        """Skip the code of gputriage's modules not skipped yet; how many code objects were."""
        if len(sys.modules) == self.modules_seen:
            return 0
        skip = skipper()
        if skip is None:
            return 0
        self.modules_seen = len(sys.modules)
        skipped = 0
        for name, module in list(sys.modules.items()):
            if name in self.done or not (name == "gputriage" or name.startswith(("gputriage.", "gputriage_"))):
                continue
            if not _ready(module, loading=False):
                self.modules_seen = -1  # still importing: looked at again next time
                continue
            self.done.add(name)
            skipped += _skip_codes(skip, module)
        return skipped


# --- dynamo's records, tallied -----------------------------------------------------------------------------------
class Frame:
    """One code object dynamo compiled (a compile id's frame number), its compilations tallied."""

    __slots__ = ("compilations", "compile_s", "failures", "file", "line", "name", "recompile_reason", "recompiles")

    def __init__(self) -> None:
        self.name = self.file = self.recompile_reason = ""
        self.line = self.compilations = self.recompiles = 0
        self.compile_s = 0.0
        self.failures: list[tuple[str, str, str, int]] = []  # (fallback, dynamo's reason, the break's file, line)


def fallback(reason: str) -> tuple[str, str]:
    """Why dynamo gave up on a frame, from its words: (what, the graph break's own reason where it was one)."""
    if _LIMIT.search(reason):
        return RECOMPILE_LIMIT, ""
    if _LOOP.search(reason):
        return LOOP_BREAK, _text(reason)
    return _text(reason), ""


class Tally:
    """Dynamo's compilations in this process, by compile id (forward and backward), kept across reads. A
    `torch._dynamo.reset()` numbers frames from 0 again: a record of another code under a known frame number starts
    a new frame."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, bool, int]] = set()
        self.current: dict[str, Frame] = {}  # by frame number
        self.frames: list[Frame] = []

    def add(self, records: Iterable[Any]) -> None:
        """Tally torch's records (`torch._dynamo.utils.get_compilation_metrics()`) not tallied yet."""
        for m in records:
            cid = str(getattr(m, "compile_id", None) or "")
            backward = getattr(m, "is_forward", None) is False
            key = (cid, backward, int(getattr(m, "start_time_us", None) or 0))
            if not cid or key in self.seen or len(self.seen) >= MAX_RECORDS:
                continue
            self.seen.add(key)
            number, name = cid.rsplit("/", 1)[0], getattr(m, "co_name", None)
            f = self.current.get(number)
            if f is None or (name and f.name and (f.name, f.file) != (name, str(m.co_filename or ""))):
                f = self.current[number] = Frame()
                self.frames.append(f)
            if name and not f.name:
                f.name, f.file, f.line = str(name), str(m.co_filename or ""), int(m.co_firstlineno or 0)
            us = getattr(m, "duration_us", None)
            f.compile_s += us / 1e6 if us else float(getattr(m, "entire_frame_compile_time_s", None) or 0.0)
            if backward:  # the backward graph, compiled at the first backward: its seconds only
                continue
            guard = _guard(str(getattr(m, "recompile_reason", None) or ""))
            if getattr(m, "fail_type", None):
                what, why = fallback(str(getattr(m, "fail_reason", None) or m.fail_type))
                place = str(getattr(m, "fail_user_frame_filename", None) or ""), getattr(m, "fail_user_frame_lineno", 0)
                f.failures.append((what, why, place[0], int(place[1] or 0)))
            else:
                f.compilations += 1
                if guard:
                    f.recompiles += 1
                    f.recompile_reason = guard

    def functions(self) -> list[dict[str, Any]]:
        """The workload's compiled functions (gputriage's left out), the costliest first; a resume function (the
        code after a graph break) as the function it continues, after the break's line."""
        merged: dict[tuple[str, str, int, bool], dict[str, Any]] = {}
        for f in self.frames:
            if own_file(f.file) or not f.name:
                continue
            m = _RESUME.match(f.name)
            key = (m["function"], f.file, int(m["line"]), True) if m else (f.name, f.file, f.line, False)
            row = merged.setdefault(key, {"function": key[0], "file": key[1], "line": key[2], "compile_s": 0.0})
            row["after_break"] = key[3]
            row["compilations"] = row.get("compilations", 0) + f.compilations
            row["recompiles"] = row.get("recompiles", 0) + f.recompiles
            row["compile_s"] += f.compile_s
            if f.recompile_reason:
                row["recompile_reason"] = f.recompile_reason
            if f.failures:
                row["fallback"] = f.failures[-1][0]
        rows = sorted(merged.values(), key=lambda r: (-r["compile_s"], -r["compilations"]))
        for r in rows:
            r["compile_s"] = round(r["compile_s"], 3)
        return rows


def _user_code(code: Any) -> bool:
    """A code object of the workload's (not torch's own, which dynamo also sees, nor gputriage's)."""
    path = getattr(code, "co_filename", "") or ""
    return not (_TORCH in path or path.startswith("<frozen") or own_file(path))


def _compile_s(utils: Any) -> Optional[float]:
    """Seconds compiling, forward and backward graphs (torch's own total), or the frames' alone on an older torch."""
    spent = getattr(utils, "calculate_time_spent", None)
    for _ in range(3):
        if not callable(spent):
            break
        try:
            total = spent().get("total_wall_time")
        except RuntimeError:  # a phase added while read (dynamo compiles on the main thread): again
            continue
        if total:
            return round(float(total), 3)
        break
    compiled = (getattr(utils, "compilation_time_metrics", None) or {}).get("_compile.compile_inner")
    return round(float(sum(compiled)), 3) if compiled else None


def read(utils: Any, convert_frame: Any = None, tally: Optional[Tally] = None) -> dict[str, Any]:
    """Dynamo's counters and records as one report: graph breaks by reason and by place, functions compiled and
    recompiled (and why), those dynamo gave up on, seconds compiling."""
    counters = getattr(utils, "counters", {})
    tally = tally if tally is not None else Tally()
    get_records = getattr(utils, "get_compilation_metrics", None)
    if callable(get_records):
        tally.add(get_records())
    breaks = dict(counters.get("graph_break", {}))
    resumes = dict(counters.get("resumes", {}))
    files = {f.name: f.file for f in tally.frames if f.name}
    codes: list[CodeType] = []
    if not all(n in files for n in resumes) or not tally.frames:  # an older torch: the codes dynamo saw
        seen = getattr(getattr(convert_frame, "input_codes", None), "seen", None)
        codes = [c for c in (ref() for ref in seen or ()) if c is not None and _user_code(c)]
        files = {**{c.co_name: c.co_filename for c in codes}, **files}
    reasons = {_text(r): 0 for r in breaks}
    for r, n in breaks.items():
        reasons[_text(r)] += int(n)
    sites: dict[tuple[str, int, str, bool], int] = {}
    for name, count in resumes.items():
        m = _RESUME.match(name)
        if m and not own_file(files.get(name, "")):
            key = (m["function"], int(m["line"]), files.get(name, ""), False)
            sites[key] = sites.get(key, 0) + int(count)
    loop_breaks = 0
    for f in tally.frames:
        for what, why, file, line in f.failures if not own_file(f.file) else ():
            if what == LOOP_BREAK:  # a break dynamo would not split the graph at: the whole frame runs eagerly
                loop_breaks += 1
                reasons[why] = reasons.get(why, 0) + 1
                key = (f.name, line, file or f.file, True)
                sites[key] = sites.get(key, 0) + 1
    functions = tally.functions()
    out: dict[str, Any] = {
        "graph_breaks": int(sum(breaks.values())) + loop_breaks,
        "loop_breaks": loop_breaks,
        "unique_graphs": int(dict(counters.get("stats", {})).get("unique_graphs", 0)),
        "break_reasons": [
            {"reason": r, "count": c} for r, c in sorted(reasons.items(), key=lambda kv: -kv[1])[:MAX_ITEMS]
        ],
        "break_sites": [
            {"function": k[0], "line": k[1], "count": c, "file": k[2], **({"in_loop": True} if k[3] else {})}
            for k, c in sorted(sites.items(), key=lambda kv: -kv[1])[:MAX_ITEMS]
        ],
    }
    seconds = _compile_s(utils)
    if seconds is not None:
        out["compile_s"] = seconds
    if tally.frames:  # torch's records: each compilation, and why it compiled again
        out["frames_compiled"] = sum(r["compilations"] for r in functions)
        out["recompiles"] = sum(r["recompiles"] for r in functions)
        out["compiled_functions"] = functions[:MAX_ITEMS]
    else:  # an older torch: the frames counter, and the functions dynamo saw
        out["frames_compiled"] = int(dict(counters.get("frames", {})).get("total", 0))
        if codes:
            out["recompiles"] = max(0, out["frames_compiled"] - len(codes))
            named = [c for c in codes if not _RESUME.match(c.co_name)][:MAX_ITEMS]
            out["compiled_functions"] = [
                {"function": c.co_name, "file": c.co_filename, "line": c.co_firstlineno} for c in named
            ]
    return out


def mark(utils: Any) -> tuple[Any, ...]:
    """What changes whenever dynamo compiles or breaks: its last record, its counters' totals."""
    get_records = getattr(utils, "get_compilation_metrics", None)
    last = (get_records() if callable(get_records) else None) or [None]
    counters = getattr(utils, "counters", {})
    totals = [sum(dict(counters.get(k, {})).values()) for k in ("graph_break", "resumes", "frames", "stats")]
    return getattr(last[-1], "compile_id", None), getattr(last[-1], "start_time_us", None), *totals


def write(folder: str, report: dict[str, Any]) -> None:
    """Replace this process's report (a reader never sees half a file)."""
    path = os.path.join(folder, f"{PREFIX}{os.getpid()}.json")
    tmp = f"{path}.{threading.get_ident()}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, path)


class Watcher:
    """What the thread does at each look, and once more at exit (one at a time)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.own, self.tally = OwnFrames(), Tally()
        self.lock = threading.Lock()
        self.marked: Optional[tuple[Any, ...]] = None  # dynamo's mark at the last read

    def look(self) -> bool:
        """Skip gputriage's new frames, read dynamo's records and write the report where they changed; whether
        torch is imported."""
        if not self.lock.acquire(timeout=10.0):
            return True
        try:
            self.own.skip()
            utils = sys.modules.get("torch._dynamo.utils")
            now = mark(utils) if _ready(utils) else None
            if now is not None and now != self.marked:
                report = read(utils, sys.modules.get("torch._dynamo.convert_frame"), self.tally)
                compiled = report["frames_compiled"] or report.get("compiled_functions") or report["graph_breaks"]
                if compiled:
                    write(self.folder, report)
                self.marked = now
        except Exception:
            pass  # a record this torch does not have, a folder gone: report what was written
        finally:
            self.lock.release()
        return _ready(sys.modules.get("torch"))


def watch(folder: str, period_s: float = PERIOD_S, stop: Optional[threading.Event] = None) -> None:
    """The thread: a look ten times a second until torch is imported (a dict lookup), then each `period_s`; a last
    one at exit, after the workload's own exit handlers (registered before the workload runs, run last)."""
    until = stop or threading.Event()
    watcher = Watcher(folder)
    if stop is None:
        atexit.register(watcher.look)
    torch = False
    while not until.wait(period_s if torch else min(period_s, TORCH_WAIT_S)):
        torch = watcher.look()
    watcher.look()


def start(folder: str, stop: Optional[threading.Event] = None) -> threading.Thread:
    t = threading.Thread(target=watch, args=(folder,), kwargs={"stop": stop}, name="gputriage-dynamo", daemon=True)
    t.start()
    return t


def main() -> Optional[threading.Thread]:
    """Start the thread in this interpreter (what the injected `sitecustomize` calls)."""
    folder = os.environ.get(DIR_ENV)
    return start(folder) if folder else None

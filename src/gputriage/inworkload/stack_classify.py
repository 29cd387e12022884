"""How the stack sampler reads one stack (`stack_sampler`; standard library only: it runs inside the workload): what
each file is by its path (`file_kind`: the workload's own, the standard library, a plain library, parts of torch, a
GPU library or a training framework, torch.distributed), and `Classifier`, which names a stack's category and line
from its innermost frames or the text of its innermost line, keeping what it learned of files and lines."""

from __future__ import annotations

import linecache
import os
import re
import sys
from types import FrameType
from typing import Any, Optional

_V: Any
_L: Any
if __name__.startswith("gputriage."):
    from gputriage.inworkload import stack_categories as _V
    from gputriage.inworkload import stack_libraries as _L
else:  # loaded by its path inside the workload, after its siblings (`stack_sampler._sibling`)
    _V, _L = sys.modules["gputriage_stack_categories"], sys.modules["gputriage_stack_libraries"]

CATEGORIES: tuple[str, ...] = _V.CATEGORIES
MAX_DEPTH = 200  # frames walked per stack
GC_LINE = ("<garbage collection>", 0, _V.GC)
_GPU_WAIT, _INPUT, _COPY, _HOST, _COMPILE, _GC, _LAUNCH = (
    CATEGORIES.index(c) for c in (_V.GPU_WAIT, _V.INPUT_WAIT, _V.COPY, _V.HOST_COMPUTE, _V.COMPILE, _V.GC, _V.LAUNCH)
)
_LOOP = CATEGORIES.index(_V.LOOP)
_BY_NAME = {name: i for i, name in enumerate(CATEGORIES)}

# what a file is, from its path
USER, STDLIB, LIBRARY, TORCH, COMPILER, LOADER, TORCH_SYNC, PINNING, MODULE, GPU_LIB, FRAMEWORK = range(11)
DISTRIBUTED = 11  # torch.distributed's collectives, barriers and rendezvous (not its launcher, `elastic`)
_COLLECTIVE = CATEGORIES.index(_V.COLLECTIVE_WAIT)
_WORK_WAIT = re.compile(r"\.wait\(\s*\)")  # a C wait on a line of the workload's: a collective's Work.wait()
_LAUNCHERS = ("/torch/distributed/elastic/", "/torch/distributed/launcher/", "/torch/distributed/run.py")
_STDLIB_DIR = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_GPUTRIAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_COMPILE_DIRS = "torch/_dynamo/convert_frame.py torch/_inductor/compile_fx.py torch/_inductor/async_compile.py "
_COMPILERS = (*_COMPILE_DIRS.split(), "torch/_inductor/autotune_process.py", "torch/_inductor/select_algorithm.py")
_COMPILERS += ("triton/compiler/", *_L.COMPILERS)
_GENERATED = re.compile(r"/(\w\w)/c\1\w{40,}\.py$")  # inductor's code in a cache dir of any name: xy/cxy<hash>.py
_SYNCS = ("torch/cuda/__init__.py", "torch/cuda/streams.py", "torch/_tensor_str.py")
# blocking stdlib functions: (file suffix, function names; empty: any)
_WAITS = (
    ("threading.py", ("wait", "acquire", "join", "_wait_for_tstate_lock")),
    ("queue.py", ("get", "put", "join")),
    ("selectors.py", ()),
    ("socket.py", ("accept", "readinto", "recv_into", "create_connection")),
    ("ssl.py", ("read", "recv", "recv_into")),
    ("multiprocessing/connection.py", ()),
    ("multiprocessing/queues.py", ("get",)),
    ("multiprocessing/synchronize.py", ()),
    ("multiprocessing/pool.py", ("get", "wait")),
    ("subprocess.py", ("wait", "communicate", "_try_wait", "_wait")),
    ("concurrent/futures/_base.py", ("result", "wait", "as_completed")),
    ("asyncio/base_events.py", ("run_forever", "_run_once")),
)
_INPUT_LINE = (
    r"sleep\(|\.recv(?:_into|from)?\(|\.accept\(|\bselect\(|\.poll\(|\binput\(|\.readline\(|(?:queue|\bq|_q)\.get"
)
_LINE_RULES = (  # the innermost line's text, in order: (category, pattern)
    (_GPU_WAIT, re.compile(r"\.(?:item|cpu|tolist|numpy)\(\)|synchronize\(|\.wait_(?:event|stream)\(")),
    (_COPY, re.compile(r"\.to\(|\.cuda\(|copy_\(|pin_memory\(")),
    (_INPUT, re.compile(_INPUT_LINE + r"(?:_nowait)?\(", re.I)),
    (_LAUNCH, re.compile(r"\btorch\.|\bF\.|\s@\s|\.backward\(")),
)
_HOST_ONLY = {_GPU_WAIT: _HOST, _COPY: _HOST, _LAUNCH: _HOST}  # without CUDA
# torch's threads that wait (inductor's worker pool on its pipe, a timer): names that get a line read, a wait's text
_BLOCKING = frozenset(("sleep", "read", "readline", "recv", "recv_into", "recvfrom", "accept", "select", "poll"))
_TORCH_WAIT = re.compile(_INPUT_LINE + r"|\.read\(")


def file_kind(path: str) -> int:
    """What a code object's file is: the workload's own, the standard library, a library, or parts of torch."""
    p = path.replace(os.sep, "/")
    if path.startswith("<frozen") or (path.startswith(_STDLIB_DIR) and "-packages/" not in p):
        return STDLIB
    if path.startswith("<"):
        return USER  # python -c, exec'd code
    if "torchinductor_" in p or _GENERATED.search(p):  # inductor's generated code: a graph launching its kernels
        return TORCH
    pkg = _L.in_package(p)  # an installed file named from its package: a venv in /opt/torch/ is not torch
    if any(c in pkg for c in _COMPILERS):
        return COMPILER
    if "/torch/" in pkg:
        if "/torch/utils/data/_utils/pin_memory.py" in pkg:
            return PINNING
        if "/torch/utils/data/" in pkg:
            return LOADER
        if any(pkg.endswith(s) for s in _SYNCS):
            return TORCH_SYNC
        if "/torch/distributed/" in pkg and not any(x in pkg for x in _LAUNCHERS):
            return DISTRIBUTED
        return MODULE if pkg.endswith("torch/nn/modules/module.py") else TORCH
    lib = _L.library_of(pkg)
    if lib is not None:  # another GPU library (CuPy, JAX, ...), or a training framework's loop (Lightning, ...)
        return FRAMEWORK if lib == _L.FRAMEWORK else GPU_LIB
    if "-packages/" in p or path.startswith(_GPUTRIAGE_DIR):
        return LIBRARY
    return USER


def own(path: str) -> int:
    """1 for a file of the workload's own code as `file_kind` tells it, else 0 (the other lines: 1, they may be)."""
    return int(path != GC_LINE[0] and file_kind(path) == USER)


def _waits(path: str, function: str) -> bool:
    p = path.replace(os.sep, "/")
    return any(p.endswith(suffix) and (not names or function in names) for suffix, names in _WAITS)


class Classifier:
    """A stack's category and line, with what it learned about files and lines kept for the next samples. `on_gpu`:
    which GPU libraries beside torch compute on the GPU (`stack_libraries.OnGpu`; the sampler refreshes it)."""

    def __init__(self, on_gpu: Any = None) -> None:
        self.kinds: dict[str, int] = {}
        self.texts: dict[tuple[str, int], int] = {}  # the innermost line's category from its text (-1: none)
        self.waits: dict[tuple[str, str], bool] = {}
        self.distributed = False  # the process has a torch.distributed process group: a Work.wait() is a collective's
        self.work_waits: dict[tuple[str, int], bool] = {}
        self.libs = _L.Reader(on_gpu)  # the GPU libraries beside torch, the training frameworks

    def kind(self, path: str) -> int:
        k = self.kinds.get(path)
        return self.kinds.setdefault(path, file_kind(path)) if k is None else k

    def text_category(self, path: str, line: int, torch: bool = False) -> int:
        key = (path, -line if torch else line)
        c = self.texts.get(key)
        if c is None:
            text = linecache.getline(path, line)
            rules = ((_INPUT, _TORCH_WAIT),) if torch else _LINE_RULES
            c = next((cat for cat, pattern in rules if pattern.search(text)), -1)
            if len(self.texts) < 65536:
                self.texts[key] = c
        return c

    def stdlib_waits(self, code: Any) -> bool:
        """A blocking function of the standard library (`_WAITS`)."""
        key = (code.co_filename, code.co_name)
        w = self.waits.get(key)
        if w is None:
            w = self.waits[key] = _waits(*key)
        return w

    def classify(self, frame: FrameType, cuda: bool) -> tuple[int, tuple[str, int, str], bool]:
        """(category index, the line to name, an input wait under a DataLoader)."""
        leaf_code = frame.f_code
        leaf_kind = self.kind(leaf_code.co_filename)
        line_frame: Optional[FrameType] = None
        first_library: Optional[FrameType] = None
        owned = False  # past the innermost frame of code that is not the stdlib's or a plain library's
        library: Optional[str] = None  # that frame's GPU library or training framework, while its frames go on
        library_frames: list[FrameType] = []  # that library's frames, from that one outward
        compiling = loader = moving = in_module = False
        inner, inner_name = -1, ""  # the innermost frame outside the standard library: its kind, its function
        f: Optional[FrameType] = frame
        depth = 0
        while f is not None and depth < MAX_DEPTH:
            code = f.f_code
            k = self.kind(code.co_filename)
            if k == USER:
                line_frame = line_frame or f
            elif k == COMPILER:
                compiling = True
            elif k in (LOADER, PINNING):
                loader = True
            elif k == MODULE:
                in_module = True
                moving = moving or code.co_name in ("to", "cuda", "_apply")
            if inner < 0 and k != STDLIB:
                inner, inner_name = k, code.co_name
            if k != STDLIB and k != USER and first_library is None:
                first_library = f
            if not owned and k != STDLIB and k != LIBRARY:
                owned = True
                library = self.libs.library(code.co_filename) if k in (GPU_LIB, FRAMEWORK) else None
            if library is not None and k != STDLIB and k != LIBRARY:
                if k in (GPU_LIB, FRAMEWORK) and self.libs.library(code.co_filename) == library:
                    library_frames.append(f)
                else:
                    library = None
            f = f.f_back
            depth += 1
        named = line_frame or first_library or frame
        line = (named.f_code.co_filename, named.f_lineno, named.f_code.co_name)
        if (inner == DISTRIBUTED and inner_name != "<module>" and not compiling) or (
            self.distributed and leaf_kind == USER and self._work_wait(leaf_code, frame)
        ):
            return _COLLECTIVE, line, False
        if library_frames and not compiling and not (leaf_kind == STDLIB and self.stdlib_waits(leaf_code)):
            got = self._library(library_frames, cuda)
            if got >= 0:
                return got, line, False
        cat = self._category(frame, leaf_kind, compiling, loader, moving, in_module and line_frame is frame)
        if not cuda:
            cat = _HOST_ONLY.get(cat, cat)
        return cat, line, loader and cat == _INPUT

    def _work_wait(self, code: Any, frame: FrameType) -> bool:
        """The workload's line waits on a collective's handle (`work.wait()`, a C call: no frame of its own)."""
        key = (code.co_filename, frame.f_lineno)
        w = self.work_waits.get(key)
        if w is None:
            w = bool(_WORK_WAIT.search(linecache.getline(*key)))
            if len(self.work_waits) < 65536:
                self.work_waits[key] = w
        return w

    def _library(self, frames: list[FrameType], cuda: bool) -> int:
        """What a thread does in a GPU library's code or a training framework's (`stack_libraries`); -1: nothing
        it can tell. A framework's line that launches, copies or waits (`loss.backward()`, `batch.to(device)`) says
        so by its text, as the workload's own would; the rest of its code is the loop's host work."""
        owner = frames[0]
        if self.libs.library(owner.f_code.co_filename) == _L.FRAMEWORK:
            c = self.text_category(owner.f_code.co_filename, owner.f_lineno)
            return (_HOST_ONLY.get(c, c) if not cuda else c) if c >= 0 else _LOOP
        name = self.libs.frames(frames)
        return -1 if name is None else _BY_NAME[name]

    def _category(
        self, frame: FrameType, kind: int, compiling: bool, loader: bool, moving: bool, in_forward: bool
    ) -> int:
        code = frame.f_code
        if compiling:
            return _COMPILE
        if kind == STDLIB:
            return _INPUT if self.stdlib_waits(code) else _COPY if moving else _HOST
        if kind == TORCH_SYNC:
            return _GPU_WAIT
        if kind == PINNING or moving:
            return _COPY
        if kind in (TORCH, MODULE):  # torch's Python code, or one of its threads waiting
            waits = kind == TORCH and not _BLOCKING.isdisjoint(getattr(code, "co_names", _BLOCKING))  # py-spy: none
            return _INPUT if waits and self.text_category(code.co_filename, frame.f_lineno, True) >= 0 else _LAUNCH
        if kind == LOADER:
            return _HOST  # collating or a dataset's code run on this thread (no workers)
        c = self.text_category(code.co_filename, frame.f_lineno)
        if c >= 0:
            return c
        if kind == USER:  # a call into compiled code (CuPy's kernels, a jax.jit function) shows no frame of its own
            name = self.libs.line(frame, linecache.getline(code.co_filename, frame.f_lineno))
            if name is not None:
                return _BY_NAME[name]
        return _LAUNCH if in_forward else _HOST

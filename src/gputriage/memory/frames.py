"""Which Python line a block belongs to, and which phase of a training step an allocation came from, read from the
frames the allocator recorded (innermost first). The files are judged by their paths alone: the snapshot may come
from another machine, whose standard library and packages are elsewhere."""

from __future__ import annotations

import re
from typing import Any, Iterable

from gputriage.model.memory import NO_PYTHON, NO_STACK, Frame, short_label

label = short_label  # a short 'file:line'

FRAMES_READ = 128  # frames of one stack looked at, innermost first (a stack deeper than this is cut)
_STDLIB = re.compile(r"/lib(?:64)?/python3[.\d]*/(?!.*-packages/)")
_TORCH = ("/torch/", "torchinductor_", "/torch_")
_OURS = "/gputriage/"

Key = tuple[str, int, str]  # file, line, function
_SKIP = object()  # a frame that holds no line of its own (torch, the standard library, gputriage)


def kind(path: str) -> str:
    """ "torch", "stdlib", "gputriage", "library" (an installed package) or "own" (the workload's own code)."""
    p = path.replace("\\", "/")
    if p.startswith("<frozen") or _STDLIB.search(p):
        return "stdlib"
    if any(t in p for t in _TORCH):
        return "torch"
    if _OURS in p:
        return "gputriage"
    if "-packages/" in p:
        return "library"
    return "own"


def frame_of(raw: Any) -> Frame | None:
    """A frame of the snapshot (`{"filename", "line", "name"}`), or None for one that is not."""
    if not isinstance(raw, dict):
        return None
    file, line, name = raw.get("filename"), raw.get("line"), raw.get("name")
    if not isinstance(file, str) or not isinstance(line, int) or isinstance(line, bool):
        return None
    return Frame(file, line, name if isinstance(name, str) else "?")


def frames_of(raw: Any) -> list[Frame]:
    if not isinstance(raw, list):
        return []
    out = []
    for f in raw[:FRAMES_READ]:
        frame = frame_of(f)
        if frame is not None:
            out.append(frame)
    return out


def attribute(frames: list[Frame]) -> tuple[Key, bool, str | None]:
    """The line that holds an allocation: the innermost frame outside torch, the standard library and gputriage
    (the workload's own code, or a library's model code); whether it is the workload's own; and, for a library's
    line, the workload's own line that called it."""
    if not frames:
        return (NO_STACK, 0, ""), True, None
    chosen = None
    for i, f in enumerate(frames):
        k = kind(f.file)
        if k in ("own", "library"):
            chosen = (i, f, k == "own")
            break
    if chosen is None:
        return (NO_PYTHON, 0, ""), True, None
    i, f, own = chosen
    via = None
    if not own:
        caller = next((g for g in frames[i + 1 :] if kind(g.file) == "own"), None)
        via = f"{caller.file}:{caller.line}" if caller is not None else None
    return (f.file, f.line, f.function), own, via


class Lines:
    """Line attribution of the snapshot's raw frames lists, cached by the list itself (the allocator gives one list to
    every block allocated from the same stack, and a crafted snapshot that shares one list a million times costs one
    look) and each file's kind by its name: a stack is read from its innermost frame only as far as its line."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Key, bool, str | None]] = {}  # id of a frames list -> its line
        self._keep: list[Any] = []  # the lists cached, kept alive so that their ids stay theirs
        self._kinds: dict[str, str] = {}
        self._frames: dict[int, Any] = {}  # id of a frame dict -> its judgement (`_judge`)

    def of(self, raw_frames: Any) -> tuple[Key, bool, str | None]:
        ident = id(raw_frames)
        got = self.cache.get(ident)
        if got is None:
            got = self._attribute(raw_frames)
            self.cache[ident] = got
            self._keep.append(raw_frames)
        return got

    def _kind(self, file: str) -> str:
        k = self._kinds.get(file)
        if k is None:
            k = self._kinds[file] = kind(file)
        return k

    def _attribute(self, raw: Any) -> tuple[Key, bool, str | None]:
        """`attribute` over the raw frame dicts, reading no further than needed (each frame dict judged once: torch
        symbolizes each distinct frame into one dict that every stack holding it shares)."""
        if not isinstance(raw, list) or not raw:
            return (NO_STACK, 0, ""), True, None
        judged = self._frames
        for i in range(min(len(raw), FRAMES_READ)):
            f = raw[i]
            got = judged.get(id(f))
            if got is None:
                got = judged[id(f)] = self._judge(f)
                self._keep.append(f)
            if got is _SKIP:
                continue
            if got[1]:
                return got
            return got[0], False, self._caller(raw, i + 1)
        return (NO_PYTHON, 0, ""), True, None

    def _judge(self, f: Any) -> Any:
        """A frame's line and whether it is the workload's own, or _SKIP (torch, the standard library, gputriage)."""
        file = f.get("filename") if type(f) is dict else None
        if type(file) is not str:
            return _SKIP
        k = self._kind(file)
        frame = frame_of(f) if k in ("own", "library") else None
        if frame is None:
            return _SKIP
        return (frame.file, frame.line, frame.function), k == "own", None

    def _caller(self, raw: list[Any], start: int) -> str | None:
        for j in range(start, min(len(raw), FRAMES_READ)):
            f = raw[j]
            file = f.get("filename") if type(f) is dict else None
            if type(file) is str and self._kind(file) == "own":
                line = f.get("line")
                if type(line) is int:
                    return f"{file}:{line}"
        return None


def phase(stack: Iterable[Frame]) -> str:
    """The phase of a training step an allocation came from: the optimizer's first step (its state created),
    the optimizer, backward, forward (inside an nn.Module's call), or other."""
    files = [(f.file.replace("\\", "/"), f.function) for f in stack]
    if any("/torch/optim/" in p for p, _ in files):
        return "optimizer_first_step" if any(fn == "_init_group" for _, fn in files) else "optimizer"
    if any("/torch/autograd/" in p or (p.endswith("torch/_tensor.py") and fn == "backward") for p, fn in files):
        return "backward"
    if any(p.endswith("torch/nn/modules/module.py") for p, _ in files):
        return "forward"
    return "other"

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
    """Line attribution cached by the frames list itself: the allocator gives one list to every block allocated
    from the same stack (and a crafted snapshot that shares one list a million times costs one look)."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Key, bool, str | None]] = {}
        self._keep: list[Any] = []  # the lists cached, kept alive so that their ids stay theirs

    def of(self, raw_frames: Any) -> tuple[Key, bool, str | None]:
        ident = id(raw_frames)
        got = self._cache.get(ident)
        if got is None:
            got = attribute(frames_of(raw_frames))
            self._cache[ident] = got
            self._keep.append(raw_frames)
        return got


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

"""The five kinds of out-of-memory error, each planted in a workload played on the model of the caching allocator
(`fake_allocator`): the snapshot the workload's observer would save (the format `torch.cuda.memory._snapshot()`
documents) and its marker (what `inworkload.memory_history` writes beside it, with the processes the sampler
read). Built, not recorded: `benchmarks/record_oom.sh` records the same five on a GPU.

Each case's planted tensor is allocated at a known line of a workload file named after the case
(`built/<case>.py:<line>`), which the verdict must name among its top three lines."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any, Callable

from gputriage.testing.fake_allocator import FakeAllocator, OutOfMemory

GIB, MIB = 1 << 30, 1 << 20
CAPACITY = 80 * GIB
CONTEXT = 512 * MIB  # the CUDA context and libraries' workspaces, outside the allocator
SITE = "/usr/lib/python3.11/site-packages/torch"
PID, OTHER_PID = 4100, 4242

Frames = list[dict[str, Any]]


class Stacks:
    """One frames list per distinct stack, shared by every block allocated from it (as torch symbolizes them)."""

    def __init__(self, case: str) -> None:
        self.file = f"/work/built/{case}.py"
        self._cache: dict[tuple[Any, ...], Frames] = {}

    def at(self, line: int, function: str, inner: tuple[tuple[str, int, str], ...] = (), outer: int = 200) -> Frames:
        key = (line, function, inner, outer)
        if key not in self._cache:
            frames = [{"filename": f"{SITE}/{f}", "line": n, "name": fn} for f, n, fn in inner]
            frames.append({"filename": self.file, "line": line, "name": function})
            frames.append({"filename": self.file, "line": outer, "name": "<module>"})
            self._cache[key] = frames
        return self._cache[key]


LINEAR = (("nn/modules/linear.py", 125, "forward"), ("nn/modules/module.py", 1762, "_call_impl"))
ADAM_INIT = (
    ("optim/adam.py", 172, "_init_group"),
    ("optim/adam.py", 226, "step"),
    ("optim/optimizer.py", 485, "wrapper"),
)


def _marker(
    a: FakeAllocator, oom: OutOfMemory, stack: Frames, t_s: float, others: list[tuple[int, int]]
) -> dict[str, Any]:
    """What the workload's observer writes, with the processes the sampler read beside it."""
    own_used = a.reserved + CONTEXT
    return {
        "t_s": t_s,
        "pid": PID,
        "device": a.device,
        "requested_bytes": oom.requested,
        "capacity_bytes": a.capacity,
        "device_free_bytes": oom.device_free,
        "stack": [[f["filename"], f["line"], f["name"]] for f in stack],
        "history": "the allocator held 75% of GPU 0",
        "processes": [{"pid": PID, "gpu": 0, "used_bytes": own_used, "own": True}]
        + [{"pid": pid, "gpu": 0, "used_bytes": used, "own": False} for pid, used in others],
    }


def _fail(a: FakeAllocator, size: int, stack: Frames) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        a.malloc(size, stack)
    except OutOfMemory as oom:
        return a.snapshot(), _marker(a, oom, stack, a.now_us / 1e6, [])
    raise AssertionError("the planted allocation fit")


def too_large() -> tuple[dict[str, Any], dict[str, Any]]:
    """Weights, then the logits of a whole long sequence in one tensor (line 31): larger than the GPU."""
    s, a = Stacks("too_large"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(40):
        a.malloc(256 * MIB, s.at(22, "build", LINEAR))
        a.tick(1000)
    return _fail(a, 96 * GIB, s.at(31, "forward", LINEAR))


def fragmented(seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """Large buffers freed, the cache then split by tensors of many sizes (line 27), half of them freed: 2 GiB
    (line 40) fits in no hole."""
    rng = random.Random(seed)
    s, a = Stacks("fragmented"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    big = [a.malloc(GIB, s.at(18, "warm_up")) for _ in range(int((CAPACITY - CONTEXT) // GIB))]
    for addr in big:
        a.free(addr)
    try:
        while True:
            a.malloc(rng.randrange(150, 450) * MIB, s.at(27, "varying_batch", LINEAR))
            a.tick(500)
    except OutOfMemory:
        pass
    for seg in list(a.segments):  # every other piece of each segment: each keeps a live one, none is given back
        live = [b.address for b in seg.blocks if b.state == "active_allocated"]
        for addr in live[1::2]:
            a.free(addr)
    return _fail(a, 2 * GIB, s.at(40, "step", LINEAR))


def growing() -> tuple[dict[str, Any], dict[str, Any]]:
    """Each step's activations freed, its loss kept with its graph (line 35: `losses.append(loss)`) until it fails."""
    s, a = Stacks("growing"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    weights = [a.malloc(512 * MIB, s.at(20, "build", LINEAR)) for _ in range(16)]
    assert weights
    for _ in range(1000):
        acts = [a.malloc(256 * MIB, s.at(30, "forward", LINEAR)) for _ in range(8)]
        a.tick(100_000)
        try:
            a.malloc(768 * MIB, s.at(35, "step"))  # kept: the planted leak
        except OutOfMemory as oom:
            return a.snapshot(), _marker(a, oom, s.at(35, "step"), a.now_us / 1e6, [])
        for addr in acts:
            a.free(addr)
        a.tick(100_000)
    raise AssertionError("the planted leak never filled the GPU")


def other_process() -> tuple[dict[str, Any], dict[str, Any]]:
    """Another process holds 40 GiB; the step's activations (line 29) need more than what is left."""
    s, a = Stacks("other_process"), FakeAllocator(CAPACITY, CONTEXT + 40 * GIB)
    a.record()
    for _ in range(20):
        a.malloc(GIB, s.at(21, "build", LINEAR))
    acts = []
    try:
        for _ in range(40):
            acts.append(a.malloc(GIB, s.at(29, "forward", LINEAR)))
            a.tick(10_000)
    except OutOfMemory as oom:
        return a.snapshot(), _marker(a, oom, s.at(29, "forward", LINEAR), a.now_us / 1e6, [(OTHER_PID, 40 * GIB)])
    raise AssertionError("the activations fit beside the other process")


def peak() -> tuple[dict[str, Any], dict[str, Any]]:
    """Weights (line 20), then the optimizer's first step creates its state (line 33, in Adam's `_init_group`):
    weights, gradients and two moments do not fit."""
    s, a = Stacks("peak"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(20):
        a.malloc(GIB, s.at(20, "build", LINEAR))
    for _ in range(20):
        a.malloc(GIB, s.at(28, "step", (("autograd/graph.py", 823, "_engine_run_backward"),)))
    state = s.at(33, "step", ADAM_INIT)
    try:
        for _ in range(40):
            a.malloc(GIB, state)
            a.tick(1000)
    except OutOfMemory as oom:
        return a.snapshot(), _marker(a, oom, state, a.now_us / 1e6, [])
    raise AssertionError("the optimizer's state fit")


CASES: dict[str, tuple[Callable[[], tuple[dict[str, Any], dict[str, Any]]], str, str]] = {
    # case: (builder, the cause's finding id, the planted line)
    "too_large": (too_large, "memory.request_too_large", "too_large.py:31"),
    "fragmented": (fragmented, "memory.fragmented", "fragmented.py:27"),
    "growing": (growing, "memory.growing", "growing.py:35"),
    "other_process": (other_process, "memory.other_process", "other_process.py:29"),
    "peak": (peak, "memory.peak_near_capacity", "peak.py:33"),
}


def pending_free() -> tuple[dict[str, Any], dict[str, Any]]:
    """None of the five: most of what the allocator holds (60 of 78 GiB) is freed but awaits another stream's work (a
    tensor used on a side stream, `record_stream`): not live, not free."""
    s, a = Stacks("pending"), FakeAllocator(CAPACITY, CONTEXT)
    a.record()
    for _ in range(78):
        a.malloc(GIB, s.at(20, "build", LINEAR))
    snap, mark = _fail(a, 2 * GIB, s.at(31, "forward", LINEAR))
    for seg in snap["segments"][:60]:
        for b in seg["blocks"]:
            b["state"] = "active_pending_free"
    return snap, mark


def write(case: str, folder: Path) -> Path:
    """The case's snapshot (`CASE.pickle`, as `_dump_snapshot` pickles it), its marker (`CASE.json`) and the
    processes the sampler read (`CASE.processes.json`), as `run` keeps them; the pickle's path."""
    build = CASES[case][0]
    snap, mark = build()
    folder.mkdir(parents=True, exist_ok=True)
    processes = mark.pop("processes")
    (folder / f"{case}.pickle").write_bytes(pickle.dumps(snap, protocol=4))
    (folder / f"{case}.json").write_text(json.dumps(mark, indent=1) + "\n")
    (folder / f"{case}.processes.json").write_text(json.dumps({"t_s": mark["t_s"], "processes": processes}) + "\n")
    return folder / f"{case}.pickle"


if __name__ == "__main__":  # python -m gputriage.testing.memory_cases FOLDER: the built fixtures written again
    import sys

    for name in CASES:
        print(write(name, Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/memory/built")))

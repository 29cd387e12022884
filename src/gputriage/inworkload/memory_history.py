"""What filled the GPU, saved from inside a Python workload under `gputriage run` (or `gputriage.monitor()`).

At an out-of-memory error PyTorch's caching allocator calls its observers before it raises (in the thread that
asked, the allocator's lock released). The observer here saves the allocator's snapshot
(`torch.cuda.memory._snapshot()`: its segments, blocks, the sizes asked for, and the stacks that allocated them
where their history is recorded) as the pickle memory_viz reads, then a small JSON marker beside it: the time, the
size that failed, what CUDA said was free and the device's capacity, and the Python stack that asked. The error is
then raised as it would have been; the workload fails, or catches it, untouched. The sampler, which reads NVML's
per-process memory, sees the marker within a sample and records the processes on the GPU at that moment beside it
(`sampling.oom_marks`): this module imports nothing but the standard library.

Allocation stacks cost the workload time at each allocation (`benchmarks/memory_history_cost.py` measures it), so
their recording (`_record_memory_history`: Python stacks of allocations, a bounded ring of events) is armed only
when the memory may run out: once a device is `ARM_USED_SHARE` full (all its processes together, as CUDA reports
it), or this process's live bytes between steps keep rising (`RISING_SLICES` slices in a row, each higher by
`RISE_SHARE` of the device) — and only while the workload allocates slowly enough for the recording to cost under
`COST_SHARE` of its time (`ALLOC_COST_S` an allocation): a loop of tiny tensors that allocates faster is never
armed, and is disarmed if it speeds up. From then on, the snapshot at an error holds the stacks of what filled the
device; while armed, a snapshot is also saved each time the live bytes pass a new high by `GROWTH_SNAPSHOT_SHARE`
of the device, which names the lines of a growth that has not failed yet. `GPUTRIAGE_MEMORY_HISTORY=on` records
from the start, `off` never (the snapshot at an error then has no stacks; the marker still has the stack that
asked).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import threading
import time
from typing import Any, Optional

HISTORY_ENV = "GPUTRIAGE_MEMORY_HISTORY"  # auto (the default), on, off
OOM_PREFIX = "memory-oom."
GROWTH_PREFIX = "memory-growth."
PICKLE = ".pickle"
MARK = ".json"
PROCESSES = ".processes.json"  # written beside the marker by the sampler

MAX_ENTRIES = 20_000  # the ring of alloc/free events the allocator keeps once armed
ARM_USED_SHARE = 0.75  # of a device's memory in use (every process's), from which the stacks are recorded
# what recording one allocation's Python stack costs the workload: 1.04 µs, measured on an H100
# (benchmarks/memory_history_cost.py, an allocation-heavy loop of 128 allocations a step, median of 5 pairs;
# docs/measurements.md)
ALLOC_COST_S = 1.04e-6
COST_SHARE = 0.01  # of the workload's time the recording may cost: at most COST_SHARE / ALLOC_COST_S allocations/s
SLICE_READS = 10  # reads per slice of the live-bytes watch (5 s at two reads a second)
RISING_SLICES = 3  # slices whose trough rose in a row
RISE_SHARE = 0.01  # of the device: the least rise of a slice's trough that counts
GROWTH_SNAPSHOT_SHARE = 0.1  # of the device: a new high by this much saves a growth snapshot (armed only)
OOM_SNAPSHOTS_FREE = 3  # errors saved whatever their pace; then at most one every OOM_GAP_S
OOM_GAP_S = 10.0
STACK_FRAMES = 64

_HERE = {  # gputriage's frames between the allocator and the workload's code
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name) for name in ("memory_history", "allocator_counters")
}


def python_stack(frame: Any, limit: int = STACK_FRAMES) -> list[list[Any]]:
    """[file, line, function] from `frame` outwards (innermost first), gputriage's own frames left out."""
    out: list[list[Any]] = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        if os.path.abspath(code.co_filename).rsplit(".", 1)[0] not in _HERE:
            out.append([code.co_filename, frame.f_lineno, code.co_name])
        frame = frame.f_back
    return out


def asking_stack() -> list[list[Any]]:
    """The stack of the allocation that failed: this thread's; where it runs no Python (autograd's backward runs on
    a thread of its own), the main thread's, which waits in `backward()`."""
    stack = python_stack(sys._getframe(1))
    if stack:
        return stack
    main = sys._current_frames().get(threading.main_thread().ident or -1)
    return python_stack(main) if main is not None else []


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp{threading.get_ident()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


class Watch:
    """One process's watch: arms the allocation stacks when memory may run out, saves the snapshots."""

    def __init__(self, folder: str, torch: Any, mode: Optional[str] = None, clock: Any = time.monotonic) -> None:
        self.folder, self.torch, self.clock = folder, torch, clock
        self.mode = (mode or os.environ.get(HISTORY_ENV) or "auto").strip().lower()
        self.armed = ""  # why the stacks are recorded ("" while they are not)
        self.closed = False
        self._capacity: dict[int, int] = {}
        self._slice: dict[int, list[float]] = {}  # device -> [reads in the slice, its lowest live bytes]
        self._troughs: dict[int, list[float]] = {}
        self._high: dict[int, float] = {}  # live bytes at the last growth snapshot (or at arming)
        self._counted: dict[int, tuple[float, float]] = {}  # device -> (monotonic s, allocations so far)
        self._too_fast = 0  # reads in a row, while armed, at an allocation rate over the budget
        self._ooms = 0
        self._last_oom_s = 0.0
        self._lock = threading.Lock()
        if self.mode == "on":
            self.arm("on from the start")

    def capacity(self, device: int) -> int:
        if device not in self._capacity:
            self._capacity[device] = int(self.torch.cuda.get_device_properties(device).total_memory)
        return self._capacity[device]

    def arm(self, why: str) -> bool:
        """Record allocation stacks (Python frames) and a bounded ring of alloc/free events, from now on."""
        if self.armed or self.mode == "off":
            return False
        try:
            self.torch.cuda.memory._record_memory_history(
                enabled="all", context="alloc", stacks="python", max_entries=MAX_ENTRIES
            )
        except Exception:  # a torch without the recording (before 2.1): the snapshots will have no stacks
            self.mode = "off"
            return False
        self.armed = why
        return True

    def disarm(self, closing: bool = True) -> None:
        """Stop recording (a `monitor()` block ended, `closing`: the process is left as it was found; or the
        workload allocates too fast for the recording's budget)."""
        self.closed = self.closed or closing
        if self.armed and self.mode != "on":
            try:
                self.torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:
                pass
            self.armed = ""

    def observe(self, device: int, reserved: float, allocated: float, allocations: float = 0.0) -> None:
        """One read of a device's allocator (twice a second, from the counters' thread): its reserved and live
        bytes, and the allocations it served so far; never raises."""
        try:
            self._observe(device, reserved, allocated, allocations)
        except Exception:
            pass

    def used_share(self, device: int, reserved: float, capacity: int) -> float:
        """How full the device is, every process's memory counted (CUDA's free bytes); else this allocator's."""
        try:
            free, total = self.torch.cuda.mem_get_info(device)
            return 1.0 - free / total if total else reserved / capacity
        except Exception:
            return reserved / capacity

    def affordable(self, device: int, allocations: float) -> bool:
        """Whether the allocations a second since the last read can be recorded within the budget (not known at
        the first read)."""
        now = self.clock()
        last = self._counted.get(device)
        self._counted[device] = (now, allocations)
        if last is None or now <= last[0]:
            return False
        return (allocations - last[1]) / (now - last[0]) * ALLOC_COST_S <= COST_SHARE

    def _observe(self, device: int, reserved: float, allocated: float, allocations: float) -> None:
        if self.closed:
            return
        capacity = self.capacity(device)
        if not capacity:
            return
        cheap = self.affordable(device, allocations)
        if self.mode == "auto" and self.armed:  # a loop that speeds up: disarmed after a slice over the budget
            self._too_fast = 0 if cheap else self._too_fast + 1
            if self._too_fast >= SLICE_READS:
                self.disarm(closing=False)
                self.mode = "too many allocations"
                return
        if not self.armed and self.mode == "auto":
            used = self.used_share(device, reserved, capacity)
            rising = self._rising(device, allocated, capacity)
            if cheap and used >= ARM_USED_SHARE:
                self.arm(f"GPU {device} was {used:.0%} full")
            elif cheap and rising:
                self.arm(f"live memory on GPU {device} rose {RISING_SLICES} slices in a row")
            if self.armed:
                self._high = {device: allocated}
            return
        if self.armed:
            high = self._high.setdefault(device, allocated)
            if allocated >= high + GROWTH_SNAPSHOT_SHARE * capacity:
                self._high[device] = allocated
                self.save(GROWTH_PREFIX, {"device": device, "allocated_bytes": int(allocated)})

    def _rising(self, device: int, allocated: float, capacity: int) -> bool:
        """Whether the troughs of the last slices rose in a row (what stays between steps keeps growing)."""
        s = self._slice.setdefault(device, [0.0, allocated])
        s[0] += 1
        s[1] = min(s[1], allocated)
        if s[0] < SLICE_READS:
            return False
        troughs = self._troughs.setdefault(device, [])
        troughs.append(s[1])
        self._slice[device] = [0.0, float("inf")]
        del troughs[: -(RISING_SLICES + 1)]
        steps = list(zip(troughs, troughs[1:]))
        return len(steps) == RISING_SLICES and all(b - a >= RISE_SHARE * capacity for a, b in steps)

    def on_oom(self, device: int, requested: int, capacity: int, device_free: int) -> None:
        """PyTorch's out-of-memory observer: the snapshot and the marker, never an exception of its own (it
        would replace the workload's error)."""
        try:
            if self.closed:
                return
            now = time.time()
            with self._lock:
                self._ooms += 1
                if self._ooms > OOM_SNAPSHOTS_FREE and now - self._last_oom_s < OOM_GAP_S:
                    return
                self._last_oom_s = now
            mark = {
                "device": int(device),
                "requested_bytes": int(requested),
                "capacity_bytes": int(capacity),
                "device_free_bytes": int(device_free),
                "stack": asking_stack(),
                "ooms": self._ooms,
            }
            self.save(OOM_PREFIX, mark, now)
        except Exception:
            pass

    def save(self, prefix: str, mark: dict[str, Any], now: Optional[float] = None) -> None:
        """The allocator's snapshot as `PREFIX.PID.pickle`, then its marker `PREFIX.PID.json` (the sampler looks
        for the marker: the pickle is whole once it is there). Errors are swallowed: this is the workload."""
        try:
            snapshot = self.torch.cuda.memory._snapshot()
            base = os.path.join(self.folder, f"{prefix}{os.getpid()}")
            _write_atomic(base + PICKLE, pickle.dumps(snapshot, protocol=4))
            mark = {
                "t_s": now if now is not None else time.time(),
                "pid": os.getpid(),
                "history": self.armed or ("not armed" if self.mode == "auto" else self.mode),
                "torch": str(getattr(self.torch, "__version__", "")),
                **mark,
            }
            _write_atomic(base + MARK, json.dumps(mark).encode())
        except Exception:
            pass

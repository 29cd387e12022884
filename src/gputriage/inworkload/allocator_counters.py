"""What PyTorch's CUDA caching allocator did, reported by a Python workload under `gputriage run`.

NVML sees how much memory a GPU holds, not whether the allocator fights for it: a server that takes
96% of VRAM for its KV-cache pool at start and a loop that gives its cache back to the driver at every
step look alike from outside. Loaded into the workload with the profiler's hook (`trace.inject`), a
daemon thread waits until the workload has initialized CUDA, then twice a second copies the
allocator's cumulative counters — cudaMalloc and cudaFree calls, allocations retried after freeing
the cache, out-of-memory errors, bytes reserved and bytes held by tensors — into a small file of its
own in the folder `run` gave it (beside `gputriage.step()`'s, mapped in memory); an out-of-memory
observer also records the size that failed and what was free, and the allocator's snapshot at that moment is saved
beside them (`memory_history`, which each read also tells how full the devices are, to arm the allocation stacks
when memory may run out). The sampler reads them with the step counters (`sampling.progress`);
`gputriage.monitor()` starts the same thread around its block. Standard library only, and torch as the workload
imported it.
"""

from __future__ import annotations

import atexit
import importlib.util
import mmap
import os
import sys
import threading
import time
from typing import Any, Optional

DIR_ENV = "GPUTRIAGE_PROGRESS_DIR"
PREFIX = "allocator."
FIELDS = (
    "retries",
    "cuda_mallocs",
    "cuda_frees",
    "ooms",
    "reserved_bytes",
    "oom_requested_bytes",
    "oom_free_bytes",
    "read_t_s",
    "allocated_bytes",
)
FILE_BYTES = 8 * len(FIELDS)
PERIOD_S = 0.5  # two reads a second: 13-21 µs of the GIL each per GPU used (an H200)


def _stats(torch: Any, device: int) -> dict[str, Any]:
    return torch.cuda.memory.memory_stats_as_nested_dict(device)


def _memory_history() -> Any:
    """The sibling module that saves the allocator's snapshots: through the package, or, where this module was
    loaded by its path into the workload (the injected sitecustomize: the workload's interpreter may have no
    gputriage), by its path likewise."""
    if __package__ == "gputriage.inworkload":
        from gputriage.inworkload import memory_history

        return memory_history
    name = "gputriage_memory_history"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(os.path.dirname(__file__), "memory_history.py")
        )
        if spec is None or spec.loader is None:
            raise ImportError(name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class Counters:
    """This process's counters, written into its mapped file."""

    def __init__(self, folder: str) -> None:
        path = os.path.join(folder, PREFIX + str(os.getpid()))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.ftruncate(fd, FILE_BYTES)
            self._map = mmap.mmap(fd, FILE_BYTES)
        finally:
            os.close(fd)
        self.view = memoryview(self._map).cast("d")
        self.memory: Any = None  # the snapshots' watch (`memory_history.Watch`), where one was started

    def read(self, torch: Any) -> None:
        """Sum the counters over the GPUs this process holds a context on (none is created)."""
        has_context = getattr(torch._C, "_cuda_hasPrimaryContext", None)
        totals = [0.0] * 6
        for i in range(torch.cuda.device_count()):
            if has_context is not None and not has_context(i):
                continue
            s = _stats(torch, i)
            if not s:
                continue
            if "num_device_free" not in s:  # a torch before 2.1 counts no cudaFree: report nothing, not zero
                return
            reserved = ((s.get("reserved_bytes") or {}).get("all") or {}).get("current", 0)
            allocated = ((s.get("allocated_bytes") or {}).get("all") or {}).get("current", 0)
            totals[0] += s.get("num_alloc_retries", 0)
            totals[1] += s.get("num_device_alloc", 0)
            totals[2] += s.get("num_device_free", 0)
            totals[3] += s.get("num_ooms", 0)
            totals[4] += reserved
            totals[5] += allocated
            if self.memory is not None:
                served = ((s.get("allocation") or {}).get("all") or {}).get("allocated", 0)
                self.memory.observe(i, reserved, allocated, served)
        v = self.view
        v[0], v[1], v[2], v[3], v[4], v[8] = totals
        v[7] = time.time()

    def on_oom(self, device: int, requested: int, capacity: int, device_free: int) -> None:
        """PyTorch's out-of-memory observer: called before the error is raised (`capacity`: the device's memory, or
        the share this process is allowed), in the thread that asked."""
        self.view[5], self.view[6] = float(requested), float(device_free)
        if self.memory is not None:
            self.memory.on_oom(device, requested, capacity, device_free)


def cuda_ready() -> Any:
    """The workload's torch once it has initialized CUDA; else None."""
    torch = sys.modules.get("torch")
    if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", True):
        return None
    try:
        return torch if torch.cuda.is_initialized() else None
    except Exception:
        return None


def watch(folder: str, period_s: float = PERIOD_S, stop: Optional[threading.Event] = None) -> None:
    """The thread: wait for CUDA (for as long as the workload runs without it, or until `stop`), then keep the
    file current; a last read at exit, or when `stop` is set (`gputriage.monitor()` around a block)."""
    until = stop or threading.Event()
    torch = cuda_ready()
    while torch is None:
        if until.wait(period_s):
            return
        torch = cuda_ready()
    try:
        counters = Counters(folder)
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is not None:
            attach(counters.on_oom)
    except Exception:
        return  # an allocator this torch does not have, a folder gone: report nothing
    try:
        counters.memory = _memory_history().Watch(folder, torch)
    except Exception:
        counters.memory = None  # no snapshots; the counters all the same
    try:
        counters.read(torch)
    except Exception:
        return
    if stop is None:
        atexit.register(_last_read, counters, torch)
    while not until.wait(period_s):
        try:
            counters.read(torch)
        except Exception:
            return
    _last_read(counters, torch)
    if counters.memory is not None:  # the block of a `monitor()` ended: its stacks no longer recorded
        counters.memory.disarm()


def _last_read(counters: Counters, torch: Any) -> None:
    try:
        counters.read(torch)
    except Exception:
        pass


def start(folder: str, stop: Optional[threading.Event] = None) -> threading.Thread:
    """The thread, started: reporting into `folder` until the process ends (or `stop` is set)."""
    t = threading.Thread(target=watch, args=(folder,), kwargs={"stop": stop}, name="gputriage-allocator", daemon=True)
    t.start()
    return t


def main() -> Optional[threading.Thread]:
    """Start the thread in this interpreter (what the injected `sitecustomize` calls)."""
    folder = os.environ.get(DIR_ENV)
    return start(folder) if folder else None

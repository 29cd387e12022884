"""The kinds of time a Python thread spends, as the stack sampler classifies its stacks (`stack_sampler`), and what
a thread in each is doing, as the reports and the verdicts say it: one vocabulary for the sampler, the windows
(`model.window`), the py-spy reader (`sampling.pyspy`), the judges and the renderers. Standard library only: the
sampler runs inside the workload.

A category is one line of `ALL`: its name (what the sampler writes), the field of a window that holds the main
thread's share of it (`model.window.WindowMetrics`), what a thread in it is doing ("the main thread waits for input
62%"), and whether a thread in it sleeps (blocked, its time costs no CPU) or works. A window field is a typed
record's field: a new category needs that field too (`tests/test_stack_categories.py` says so)."""

from __future__ import annotations

from typing import NamedTuple


class Category(NamedTuple):
    name: str
    field: str  # the window's field for the main thread's share of its time in it
    doing: str  # what a thread in it does: "the main thread {doing} 62%"
    waits: bool  # the thread sleeps in it (blocked), rather than works


GPU_WAIT = "gpu_wait"
INPUT_WAIT = "input_wait"
COPY = "copy"
HOST_COMPUTE = "host_compute"
COMPILE = "compile"
GC = "gc"
LAUNCH = "launch"
COLLECTIVE_WAIT = "collective_wait"
LOOP = "loop"
HOST_OPS = "host_ops"

ALL = (
    Category(GPU_WAIT, "host_gpu_wait_share", "waits on the GPU", waits=True),  # .item(), synchronize
    Category(INPUT_WAIT, "host_input_wait_share", "waits for input", waits=True),  # queues, sockets, sleep, a loader
    Category(COPY, "host_copy_share", "copies", waits=False),  # .to, .cuda, copy_, pinning
    Category(HOST_COMPUTE, "host_compute_share", "computes on the host", waits=False),  # Python, numpy, tokenizers
    Category(COMPILE, "host_compile_share", "compiles", waits=False),  # torch.compile compiling
    Category(GC, "host_gc_share", "collects garbage", waits=False),  # Python's garbage collector
    Category(LAUNCH, "host_launch_share", "launches GPU ops", waits=False),  # in torch's, CuPy's, JAX's ops: launching
    # a training framework's own code: Lightning's or the Trainer's loop, hooks, callbacks, logging, progress bar
    Category(LOOP, "host_loop_share", "runs the training framework's loop", waits=False),
    # a library's ops computed on the CPU: ONNX Runtime's CPU provider, JAX on its CPU backend, numba on the CPU
    Category(HOST_OPS, "host_ops_share", "runs a library's ops on the CPU", waits=False),
    Category(COLLECTIVE_WAIT, "host_collective_wait_share", "waits in a collective", waits=True),  # for its peers
)
CATEGORIES = tuple(c.name for c in ALL)  # in the sampler's order (its counts are lists in this order)
DOING = {c.name: c.doing for c in ALL}
SHARE_FIELDS = {c.name: c.field for c in ALL}
WAITS = frozenset(c.name for c in ALL if c.waits)  # a thread asleep
BUSY = tuple(c.name for c in ALL if not c.waits)  # a thread at work

# not a category: of the main thread's input waits, those under a DataLoader's frames, counted apart
LOADER = "loader"
LOADER_FIELD = "host_input_loader_share"


def doing(category: str) -> str:
    """What a thread in `category` does; the name itself for one this vocabulary does not know (a newer sampler's)."""
    return DOING.get(category, category)

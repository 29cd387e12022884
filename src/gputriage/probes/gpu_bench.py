"""GPU ceilings through torch, run in a child process by `gputriage bench`.

Prints one JSON object per line: {"probe": name, "value", "unit", "t0", "t1", "detail"} (t0/t1 in
unix seconds, so the parent can match the NVML conditions it sampled meanwhile), or {"probe",
"error"}. Timing: CUDA events around the timed region, warm-up first, median of repeats, random
data (never zeros), inputs rotated so repeats do not hit a warm L2; every probe bounded in time
and memory, and its tensors freed before the next.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

QUICK_SHAPES = (8192,)
FULL_SHAPES = (4096, 8192, 12288, 16384)
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3")


def emit(**row: Any) -> None:
    print(json.dumps(row), flush=True)


def timed(torch: Any, fn: Callable[[int], Any], repeats: int, warmup: int = 3, budget_s: float = 3.0) -> float:
    """Median seconds of fn(i) over `repeats` runs (i rotates inputs), CUDA events, bounded in time."""
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    times = []
    deadline = time.monotonic() + budget_s
    for i in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
        if time.monotonic() > deadline and len(times) >= 3:
            break
    return statistics.median(times)


def matmul(torch: Any, dtype: str, shapes: tuple[int, ...], repeats: int) -> None:
    major, minor = torch.cuda.get_device_capability()
    if dtype == "fp8_e4m3" and (major, minor) < (8, 9):
        emit(probe=f"matmul.{dtype}", error=f"fp8 needs compute capability 8.9+, this GPU is {major}.{minor}")
        return
    if dtype == "bf16" and major < 8:
        emit(probe=f"matmul.{dtype}", error="bf16 tensor cores need compute capability 8.0+ (emulated here)")
        return
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    best: dict[str, Any] | None = None
    t0 = time.time()
    sweep: list[dict[str, Any]] = []
    for n in shapes:
        try:
            if dtype == "fp8_e4m3":
                a = [torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn) for _ in range(2)]
                b = [torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t() for _ in range(2)]
                one = torch.ones((), device="cuda")
                fn = lambda i: torch._scaled_mm(a[i % 2], b[i % 2], scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                tdt = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[
                    dtype
                ]
                a = [torch.randn(n, n, device="cuda", dtype=tdt) for _ in range(2)]
                b = [torch.randn(n, n, device="cuda", dtype=tdt) for _ in range(2)]
                fn = lambda i: a[i % 2] @ b[i % 2]
            secs = timed(torch, fn, repeats)
        except Exception as exc:  # out of memory, unsupported op
            sweep.append({"n": n, "error": f"{type(exc).__name__}: {str(exc)[:120]}"})
            continue
        finally:
            a = b = []  # free the operands before the next shape
            torch.cuda.empty_cache()
        tflops = 2 * n**3 / secs / 1e12
        sweep.append({"n": n, "tflops": round(tflops, 1), "ms": round(secs * 1e3, 3)})
        if best is None or tflops > best["tflops"]:
            best = {"n": n, "tflops": tflops}
    torch.backends.cuda.matmul.allow_tf32 = False
    if best is None:
        emit(probe=f"matmul.{dtype}", error="; ".join(s.get("error", "") for s in sweep))
        return
    emit(
        probe=f"matmul.{dtype}",
        value=round(best["tflops"], 1),
        unit="TFLOP/s",
        t0=t0,
        t1=time.time(),
        detail={"best_shape": [best["n"]] * 3, "sweep": sweep, "tf32": dtype == "tf32"},
    )


def memory(torch: Any, quick: bool) -> None:
    """Device-to-device copy (bytes read + written) and a read-only reduction, buffers far beyond the L2;
    each timed sample is several back-to-back passes, so launch and event costs do not count."""
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 * 2**20) or 64 * 2**20
    nbytes = max(16 * l2, 2 << 30) if not quick else max(8 * l2, 512 << 20)
    passes = 4
    n = nbytes // 4
    src = [torch.randn(n, device="cuda") for _ in range(2)]
    dst = torch.empty(n, device="cuda")

    def copies(i: int) -> None:
        for k in range(passes):
            dst.copy_(src[(i + k) % 2])

    def reads(i: int) -> None:
        for k in range(passes):
            src[(i + k) % 2].sum()

    t0 = time.time()
    secs = timed(torch, copies, repeats=10 if quick else 20)
    emit(
        probe="memory.copy",
        value=round(2 * nbytes * passes / secs / 1e9, 1),
        unit="GB/s",
        t0=t0,
        t1=time.time(),
        detail={
            "buffer_bytes": nbytes,
            "counted": "bytes read + bytes written",
            "l2_bytes": l2,
            "passes_per_sample": passes,
        },
    )
    t0 = time.time()
    secs = timed(torch, reads, repeats=10 if quick else 20)
    emit(
        probe="memory.read",
        value=round(nbytes * passes / secs / 1e9, 1),
        unit="GB/s",
        t0=t0,
        t1=time.time(),
        detail={"buffer_bytes": nbytes, "counted": "bytes read (a reduction)", "passes_per_sample": passes},
    )


def host_copies(torch: Any, quick: bool) -> None:
    nbytes = (128 if quick else 256) << 20
    n = nbytes // 4
    dev = torch.empty(n, device="cuda")
    for kind in ("pinned", "pageable"):
        host = torch.randn(n)
        if kind == "pinned":
            host = host.pin_memory()
        for direction in ("h2d", "d2h"):
            t0 = time.time()
            dst, src = (dev, host) if direction == "h2d" else (host, dev)
            secs = timed(torch, copier(dst, src), repeats=10 if quick else 20)
            emit(
                probe=f"pcie.{direction}_{kind}",
                value=round(nbytes / secs / 1e9, 1),
                unit="GB/s",
                t0=t0,
                t1=time.time(),
                detail={"buffer_bytes": nbytes, "pinned": kind == "pinned"},
            )
        host = dst = src = None  # free before the next kind


def copier(dst: Any, src: Any) -> Callable[[int], Any]:
    """One timed repeat of a copy from `src` into `dst`."""
    return lambda _i: dst.copy_(src, non_blocking=True)


def node_cpus(node: int) -> set[int]:
    text = open(f"/sys/devices/system/node/node{node}/cpulist").read().strip()
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_copies(torch: Any, gpu_node: int, nodes: list[int]) -> None:
    """Pinned H2D from a buffer on each NUMA node (first touch while pinned to that node's CPUs)."""
    nbytes = 256 << 20
    n = nbytes // 4
    dev = torch.empty(n, device="cuda")
    mine = os.sched_getaffinity(0)
    try:
        for node in nodes:
            os.sched_setaffinity(0, node_cpus(node))
            host = torch.randn(n).pin_memory()
            t0 = time.time()
            secs = timed(torch, copier(dev, host), repeats=10)
            emit(
                probe=f"pcie.h2d_pinned_node{node}",
                value=round(nbytes / secs / 1e9, 1),
                unit="GB/s",
                t0=t0,
                t1=time.time(),
                detail={
                    "buffer_node": node,
                    "gpu_node": gpu_node,
                    "placement": "local" if node == gpu_node else "remote",
                },
            )
            host = None
    finally:
        os.sched_setaffinity(0, mine)


def launches(torch: Any) -> None:
    x = torch.zeros(1, device="cuda")
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    t0 = time.time()
    count = 5000
    start = time.perf_counter()
    for _ in range(count):
        x.add_(1)
    enqueue = (time.perf_counter() - start) / count
    torch.cuda.synchronize()
    emit(
        probe="launch.enqueue",
        value=round(enqueue * 1e6, 2),
        unit="µs",
        t0=t0,
        t1=time.time(),
        detail={"what": "host time to enqueue one tiny kernel from Python (torch add_), no sync"},
    )
    lat = []
    for _ in range(500):
        s = time.perf_counter()
        x.add_(1)
        torch.cuda.synchronize()
        lat.append(time.perf_counter() - s)
    emit(
        probe="launch.latency",
        value=round(statistics.median(lat) * 1e6, 2),
        unit="µs",
        t0=t0,
        t1=time.time(),
        detail={"what": "launch + synchronize of one tiny kernel, median of 500"},
    )
    rt = []
    y = torch.ones(1, device="cuda")
    for _ in range(500):
        s = time.perf_counter()
        y.item()
        rt.append(time.perf_counter() - s)
    emit(
        probe="launch.item_roundtrip",
        value=round(statistics.median(rt) * 1e6, 2),
        unit="µs",
        t0=t0,
        t1=time.time(),
        detail={"what": "tensor.item() on an idle GPU: a D2H copy and a host synchronization"},
    )
    kernels = 100
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(kernels):
                x.add_(1)
    torch.cuda.synchronize()
    secs = timed(torch, lambda i: graph.replay(), repeats=50)
    emit(
        probe="launch.graph_per_kernel",
        value=round(secs / kernels * 1e6, 3),
        unit="µs",
        t0=t0,
        t1=time.time(),
        detail={"what": f"CUDA graph replay of {kernels} tiny kernels, per kernel"},
    )


def peers(torch: Any) -> None:
    count = torch.cuda.device_count()
    if count < 2:
        return
    nbytes = 256 << 20
    for a in range(count):
        for b in range(count):
            if a == b:
                continue
            src = torch.randn(nbytes // 4, device=f"cuda:{a}")
            dst = torch.empty(nbytes // 4, device=f"cuda:{b}")
            t0 = time.time()
            secs = timed(torch, lambda i: dst.copy_(src, non_blocking=True), repeats=10)
            emit(
                probe=f"p2p.{a}to{b}",
                value=round(nbytes / secs / 1e9, 1),
                unit="GB/s",
                t0=t0,
                t1=time.time(),
                detail={"buffer_bytes": nbytes, "peer_access": torch.cuda.can_device_access_peer(a, b)},
            )
            src = dst = None  # free before the next pair


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    try:
        import torch
    except Exception as exc:
        emit(probe="torch", error=f"torch is not importable: {exc}")
        return 0
    if not torch.cuda.is_available():
        emit(probe="torch", error="torch cannot use CUDA here (torch.cuda.is_available() is False)")
        return 0
    torch.manual_seed(0)
    emit(
        probe="device",
        value=0,
        unit="",
        detail={
            "name": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "capability": list(torch.cuda.get_device_capability(0)),
        },
    )
    steps: list[tuple[str, Callable[[], None]]] = []
    for dtype in ("bf16", "fp32") if quick else DTYPES:
        steps.append(
            (
                f"matmul.{dtype}",
                functools.partial(
                    matmul, torch, dtype, QUICK_SHAPES if quick else FULL_SHAPES, repeats=10 if quick else 20
                ),
            )
        )
    steps += [
        ("memory", lambda: memory(torch, quick)),
        ("pcie", lambda: host_copies(torch, quick)),
        ("launch", lambda: launches(torch)),
    ]
    if "--numa" in argv:  # --numa GPU_NODE NODE,NODE,...: only where several nodes exist
        i = argv.index("--numa")
        gpu_node, nodes = int(argv[i + 1]), [int(x) for x in argv[i + 2].split(",")]
        steps.append(("pcie.numa", lambda: numa_copies(torch, gpu_node, nodes)))
    if not quick:
        steps.append(("p2p", lambda: peers(torch)))
    for name, step in steps:
        try:
            step()
        except Exception as exc:
            emit(probe=name, error=f"{type(exc).__name__}: {str(exc)[:200]}")
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

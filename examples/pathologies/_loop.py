"""The loop every pathology shares: run `step` for a while, print throughput.

Each pathology module defines `build(fixed: bool) -> (step, unit)` where `step()` does one
iteration and returns how many `unit`s it processed. Run a pathology as a script:
    python input_starved.py            # the mistake
    python input_starved.py --fixed    # the seed's decision applied
"""

from __future__ import annotations

import argparse
import time
from typing import Callable


def capture_graph(fn: Callable[[], object]):
    """Warm `fn` up on a side stream, then capture it as one CUDA graph; returns the graph."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        fn()
    return graph


def main(build: Callable[[bool], tuple[Callable[[], float], str]], doc: str) -> None:
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--fixed", action="store_true", help="apply the fix")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long to run the steady loop")
    args = parser.parse_args()
    import torch

    try:  # the loop's progress, read by `gputriage run` (steps/s, samples/s, tokens/s, MFU)
        from gputriage import step as report_step
    except ImportError:
        report_step = None
    step, unit = build(args.fixed)
    for _ in range(3):  # warm-up: allocator, cuBLAS handles, compilation
        step()
    torch.cuda.synchronize()
    print(f"loop_start: {time.time():.3f}", flush=True)
    done, t0 = 0.0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        n = step()
        done += n
        if report_step is not None:
            report_step(tokens=n) if unit == "tokens" else report_step(samples=n)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    print(f"throughput: {done / elapsed:.2f} {unit}/s ({'fixed' if args.fixed else 'pathology'})", flush=True)

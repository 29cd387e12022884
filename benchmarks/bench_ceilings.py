"""`gputriage bench` against the best plain-torch recipe for each figure, side by side, in one run.
Needs a CUDA GPU. Prints a table (ours, recipe, ratio).

    python benchmarks/bench_ceilings.py [--repeats 30] [--save DIR]

Also times `gputriage bench --quick` and the full `gputriage bench` (whole command, wall clock);
--save keeps both JSON reports (fixtures for the rendering tests).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch


def best_bf16_gemm(repeats: int) -> float:
    best = 0.0
    for n in (4096, 8192, 12288, 16384):
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        for _ in range(5):
            a @ b
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            a @ b
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        times.sort()
        best = max(best, 2 * n**3 / times[len(times) // 2] / 1e12)
        del a, b
        torch.cuda.empty_cache()
    return best


def copy_bw(repeats: int) -> float:
    n = (2 << 30) // 4
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    dst.copy_(src)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(repeats):
        dst.copy_(src)
    e.record()
    e.synchronize()
    return 2 * n * 4 * repeats / (s.elapsed_time(e) / 1e3) / 1e9


def pinned(direction: str, repeats: int) -> float:
    n = (512 << 20) // 4
    host, dev = torch.randn(n).pin_memory(), torch.empty(n, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(repeats):
        (dev.copy_(host, non_blocking=True) if direction == "h2d" else host.copy_(dev, non_blocking=True))
    e.record()
    e.synchronize()
    return n * 4 * repeats / (s.elapsed_time(e) / 1e3) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--save", type=Path, default=None)
    args = ap.parse_args()
    walls, reports = {}, {}
    for kind, extra in (("quick", ["--quick"]), ("full", [])):
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "gputriage", "bench", "--json", *extra], capture_output=True, text=True
        )
        walls[kind] = time.perf_counter() - t0
        reports[kind] = out.stdout
        if out.returncode:
            print(f"bench {kind} exited {out.returncode}: {out.stderr[-2000:]}")
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"bench_{kind}.json").write_text(out.stdout)
    ours = {r["name"]: r for r in json.loads(reports["full"])["results"]}
    recipes = {
        "matmul.bf16": best_bf16_gemm(args.repeats),
        "memory.copy": copy_bw(args.repeats),
        "pcie.h2d_pinned": pinned("h2d", args.repeats // 3),
        "pcie.d2h_pinned": pinned("d2h", args.repeats // 3),
    }
    print(f"{'figure':22} {'gputriage':>12} {'torch recipe':>13} {'ratio':>7}")
    for name, value in recipes.items():
        o = ours.get(name, {}).get("value")
        print(f"{name:22} {o if o is not None else float('nan'):12.1f} {value:13.1f} {(o or 0) / value:7.1%}")
    print(f"{'bench --quick, wall s':22} {walls['quick']:12.1f}")
    print(f"{'bench (full), wall s':22} {walls['full']:12.1f}")
    for name in ("launch.enqueue", "launch.latency", "launch.graph_per_kernel", "launch.item_roundtrip"):
        if name in ours:
            print(f"{name:22} {ours[name]['value']:12.2f} µs")


if __name__ == "__main__":
    main()

"""Dense double-precision linear algebra as scientific codes run it: the matrix products of an iterative
solver, fp64 GEMMs of 8192x8192 back to back (Hopper runs fp64 matrix products on its tensor cores)."""

import argparse
import time

import torch

from gputriage import step

N = 8192


def main(seconds: float = 10.0) -> None:
    a = torch.randn(N, N, device="cuda", dtype=torch.float64) / N**0.5
    x = torch.randn(N, N, device="cuda", dtype=torch.float64)
    y = torch.empty_like(x)
    for _ in range(2):
        torch.matmul(a, x, out=y)
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(4):
            torch.matmul(a, x, out=y)
            x, y = y, x
        n += 4
        torch.cuda.synchronize()
        step(steps=4)
    dt = time.perf_counter() - t0
    print(f"throughput: {n / dt:.1f} products/s, {2 * N**3 * n / dt / 1e12:.1f} TFLOP/s fp64")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""CuPy multiplies 8192x8192 fp16 matrices back to back (cuBLAS on the tensor cores), synchronizing every 10
products: the SMs and tensor pipes stay busy, compute_bound."""

import argparse
import time

import cupy as cp

from gputriage import step

N = 8192


def main(seconds: float = 10.0) -> None:
    a = cp.random.standard_normal((N, N), dtype=cp.float32).astype(cp.float16)
    b = cp.random.standard_normal((N, N), dtype=cp.float32).astype(cp.float16)
    c = a @ b
    cp.cuda.Stream.null.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            c = a @ b
        cp.cuda.Stream.null.synchronize()
        n += 10
        step(samples=10)
    dt = time.perf_counter() - t0
    print(f"throughput: {2 * N**3 * n / dt / 1e12:.0f} TFLOP/s ({c.dtype})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

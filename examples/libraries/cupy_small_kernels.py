"""A CuPy loop of small elementwise kernels (no PyTorch): 40 ops a step on a vector of 4,096 floats, each op one
kernel of a few microseconds that CuPy's Python launches one after the other. The host issues kernels slower
than the GPU runs them: launch_bound."""

import argparse
import time

import cupy as cp

from gputriage import step

N, OPS = 4096, 40


def main(seconds: float = 10.0) -> None:
    x = cp.random.standard_normal(N, dtype=cp.float32)
    cp.cuda.Stream.null.synchronize()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(OPS // 4):
            x = cp.sin(x)
            x = x * 1.0001
            x = x + 0.5
            x = cp.tanh(x)
        cp.cuda.Stream.null.synchronize()
        steps += 1
        step()
    dt = time.perf_counter() - t0
    print(f"throughput: {steps / dt:.1f} steps/s, {steps * OPS / dt:,.0f} kernels/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

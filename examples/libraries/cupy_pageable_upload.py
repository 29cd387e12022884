"""CuPy uploads a fresh 256 MiB batch from pageable host memory (`cp.asarray` of a NumPy array) every step and
then only sums it: the copy through the driver's staging buffer takes the step, the SMs wait on the link:
h2d_copy_bound."""

import argparse
import time

import cupy as cp
import numpy as np

from gputriage import step

ELEMENTS = 64 * 2**20  # float32: 256 MiB


def main(seconds: float = 10.0) -> None:
    batches = [np.random.default_rng(i).standard_normal(ELEMENTS, dtype=np.float32) for i in range(2)]
    t0, steps, total = time.perf_counter(), 0, 0.0
    while time.perf_counter() - t0 < seconds:
        x = cp.asarray(batches[steps % 2])
        total += float(x.sum())
        steps += 1
        step(samples=1)
    dt = time.perf_counter() - t0
    print(f"throughput: {steps * ELEMENTS * 4 / dt / 1e9:.1f} GB/s uploaded ({total:.3g})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""A hand-written Triton kernel launched with a grid of 8 programs: each program loops over the rows of a
65,536 x 1,024 fp32 tensor (256 MiB) and scales them. The GPU runs the kernel back to back, but 8 programs
keep 8 of the GPU's SMs busy."""

import argparse
import time

import torch
import triton
import triton.language as tl

from gputriage import step

ROWS, COLS, PROGRAMS = 65536, 1024, 8


@triton.jit
def scale_rows(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, STRIDE: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for row in range(pid, n_rows, STRIDE):
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
        tl.store(y_ptr + row * n_cols + cols, x * 2.0 + 1.0, mask=cols < n_cols)


def main(seconds: float = 10.0) -> None:
    x = torch.randn(ROWS, COLS, device="cuda")
    y = torch.empty_like(x)

    def launch() -> None:
        scale_rows[(PROGRAMS,)](x, y, ROWS, COLS, BLOCK=COLS, STRIDE=PROGRAMS)

    launch()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            launch()
        torch.cuda.synchronize()
        n += 10
        step()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * 2 * x.numel() * 4 / dt / 1e9:.1f} GB/s, {n / dt:.1f} launches/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

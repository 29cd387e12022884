"""Int8 inference as quantized models run it: `torch._int_mm` of int8 operands of 8192x8192 into int32,
back to back. Integer matrix products run on the tensor cores."""

import argparse
import time

import torch

from gputriage import step

N, ITERS = 8192, 20


def main(seconds: float = 10.0) -> None:
    a = torch.randint(-64, 64, (N, N), device="cuda", dtype=torch.int8)
    b = torch.randint(-64, 64, (N, N), device="cuda", dtype=torch.int8)
    out = torch._int_mm(a, b)
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(ITERS):
            out = torch._int_mm(a, b)
        torch.cuda.synchronize()
        n += 1
        step()
    dt = time.perf_counter() - t0
    print(f"throughput: {2 * N**3 * ITERS * n / dt / 1e12:.0f} TOPS (int8), checksum {int(out[0, 0])}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

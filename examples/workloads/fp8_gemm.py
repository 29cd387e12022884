"""FP8 matrix products as Hopper runs them: `torch._scaled_mm` on e4m3 operands of 8192x8192 with
per-tensor scales, bf16 output, in a loop (the core of FP8 training and inference)."""

import argparse
import time

import torch

from gputriage import step

N = 8192


def main(seconds: float = 10.0) -> None:
    a = torch.randn(N, N, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, N, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
    one = torch.ones((), device="cuda")

    def mm() -> torch.Tensor:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    for _ in range(5):
        mm()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            mm()
        n += 20
        step(steps=20)
    torch.cuda.synchronize()
    print(f"throughput: {2 * N**3 * n / (time.perf_counter() - t0) / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

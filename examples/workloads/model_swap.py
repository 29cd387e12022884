"""Two bf16 models (8 layers of 4096 each, 256 MiB of weights) sharing the GPU's memory by being moved there and
back at every step: `.to("cuda")` before its forward and backward pass, `.to("cpu")` after, one model then the
other. The moves are the cost: pageable copies of whole models both ways (h2d_copy_bound), not computation to
keep on the GPU."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH = 8, 4096, 512


def main(seconds: float = 10.0) -> None:
    models = [torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).bfloat16() for _ in range(2)]
    x = torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for m in models:
            m.to("cuda")
            m(x).float().pow(2).mean().backward()
            m.zero_grad(set_to_none=True)
            m.to("cpu")
        n += 1
        step(samples=BATCH * 2)
    print(f"throughput: {n / (time.perf_counter() - t0):.2f} steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

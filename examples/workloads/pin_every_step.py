"""Batches pinned on the training thread: each step takes a 256 MiB batch from pageable host memory, calls
`.pin_memory()` on it (a fresh pinned copy made by the host), copies it `non_blocking` to the GPU and runs a
bf16 MLP (4 layers of 4096) on it. The pinned copy is host work the GPU waits for."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, ROWS = 4, 4096, 32768  # 32768 x 4096 bf16 = 256 MiB a batch


def main(seconds: float = 10.0) -> None:
    pool = [torch.randn(ROWS, WIDTH).to(torch.bfloat16) for _ in range(2)]  # pageable
    weights = [torch.randn(WIDTH, WIDTH, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(LAYERS)]

    @torch.inference_mode()
    def forward(i: int) -> None:
        h = pool[i % 2].pin_memory().to("cuda", non_blocking=True)
        for w in weights:
            h = torch.relu(h @ w)

    for i in range(2):
        forward(i)
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        forward(n)
        n += 1
        step(samples=ROWS)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * ROWS / dt:.0f} rows/s, {n * ROWS * WIDTH * 2 / dt / 1e9:.1f} GB/s pinned")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

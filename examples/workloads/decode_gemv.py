"""Batch-1 token generation: each token multiplies one activation row by 16 bf16 weight matrices of
8192x8192 (2 GiB of weights read per token): memory-bound by design."""

import time

import torch

from gputriage import step

LAYERS, D = 16, 8192


def main(seconds: float = 10.0) -> None:
    weights = [torch.randn(D, D, device="cuda", dtype=torch.bfloat16) * 0.01 for _ in range(LAYERS)]
    x = torch.randn(1, D, device="cuda", dtype=torch.bfloat16)

    def token() -> torch.Tensor:
        h = x
        for w in weights:
            h = torch.tanh(h @ w)
        return h

    for _ in range(10):
        token()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            token()
        n += 20
        step(tokens=20)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n / dt:.1f} tokens/s, {n * LAYERS * D * D * 2 / dt / 1e9:.0f} GB/s of weights")


if __name__ == "__main__":
    main()

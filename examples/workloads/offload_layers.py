"""A model larger than its GPU budget, half offloaded by hand: 16 bf16 layers of 8192x8192, the odd ones kept in
host memory (pageable) and copied to the GPU for each forward pass; inference at batch 64."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, BATCH = 16, 8192, 64
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    weights = [torch.randn(D, D, dtype=torch.bfloat16) * 0.01 for _ in range(LAYERS)]
    weights = [w.to(DEV) if i % 2 == 0 else w for i, w in enumerate(weights)]  # odd layers stay on the host
    x = torch.randn(BATCH, D, device=DEV, dtype=torch.bfloat16)

    @torch.inference_mode()
    def forward() -> torch.Tensor:
        h = x
        for w in weights:
            h = torch.relu(h @ w.to(DEV))
        return h

    forward()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        forward()
        n += BATCH
        step(samples=BATCH)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

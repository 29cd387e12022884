"""fp32 training with TF32 allowed for matrix products: a 10-layer MLP of width 4096, batch 8192, AdamW."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, BATCH = 10, 4096, 8192
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.ReLU())]).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(BATCH, D, device=DEV)

    def train() -> None:
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        steps += 1
        step(samples=BATCH)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {steps * BATCH / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

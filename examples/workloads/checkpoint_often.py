"""Training that saves a full checkpoint (model and AdamW state, 1.6 GB) every 10 steps with torch.save,
from the training loop: an 8-layer MLP of width 4096 in bf16 autocast, batch 4096."""

import argparse
import os
import tempfile
import time

import torch

from gputriage import step

LAYERS, D, BATCH, EVERY = 8, 4096, 4096, 10
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())]).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(BATCH, D, device=DEV)
    folder = tempfile.mkdtemp(prefix="ckpt-")
    path = os.path.join(folder, "last.pt")

    def train() -> None:
        with torch.autocast(DEV, dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        steps += 1
        step(samples=BATCH)
        if steps % EVERY == 0:
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": steps}, path)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {steps * BATCH / (time.perf_counter() - t0):.1f} samples/s")
    os.remove(path)
    os.rmdir(folder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

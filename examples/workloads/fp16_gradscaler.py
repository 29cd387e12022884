"""Mixed-precision training in fp16 with a GradScaler: a 12-layer MLP of width 4096, batch 4096, SGD with
momentum; the loss is printed every 10 steps."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, BATCH = 12, 4096, 4096
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())]).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    scaler = torch.amp.GradScaler(DEV)
    x, y = torch.randn(BATCH, D, device=DEV), torch.randn(BATCH, D, device=DEV)

    def train() -> torch.Tensor:
        with torch.autocast(DEV, dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    for _ in range(3):
        train()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        loss = train()
        steps += 1
        step(samples=BATCH)
        if steps % 10 == 0:
            print(f"step {steps} loss {loss.item():.4f}", flush=True)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {steps * BATCH / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

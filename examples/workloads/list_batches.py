"""A regression model trained on batches built from Python lists on the training thread: each batch of 4,096 rows
of 256 features is made row by row with list comprehensions of `random.random()` and handed to `torch.tensor`, then
a bf16 MLP (3 layers of 2048) trains on it. The main thread spends its time building the lists while the GPU
waits: input_starved (input made on the main thread)."""

import argparse
import random
import time

import torch

from gputriage import step

ROWS, FEATURES, WIDTH = 4096, 256, 2048


def batch(rnd: random.Random) -> torch.Tensor:
    rows = [[rnd.random() for _ in range(FEATURES)] for _ in range(ROWS)]
    return torch.tensor(rows)


def main(seconds: float = 10.0) -> None:
    rnd = random.Random(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, WIDTH),
        torch.nn.GELU(),
        torch.nn.Linear(WIDTH, WIDTH),
        torch.nn.GELU(),
        torch.nn.Linear(WIDTH, 1),
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        x = batch(rnd).cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=ROWS)
    print(f"throughput: {n * ROWS / (time.perf_counter() - t0):.0f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""A recurrent model stepped in Python: an `nn.LSTMCell` (hidden 512, batch 32) called once per time step
over 256 steps, a linear head on the last state, trained with SGD in fp32, eager. Each time step is a handful
of small kernels, forward and backward."""

import argparse
import time

import torch

from gputriage import step

STEPS, BATCH, HIDDEN = 256, 32, 512


def main(seconds: float = 10.0) -> None:
    cell = torch.nn.LSTMCell(HIDDEN, HIDDEN).cuda()
    head = torch.nn.Linear(HIDDEN, 10).cuda()
    opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=1e-3)

    def train() -> None:
        x = torch.randn(STEPS, BATCH, HIDDEN, device="cuda")
        h = torch.zeros(BATCH, HIDDEN, device="cuda")
        c = torch.zeros(BATCH, HIDDEN, device="cuda")
        for t in range(STEPS):
            h, c = cell(x[t], (h, c))
        loss = head(h).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        train()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * BATCH / dt:.1f} sequences/s, {n * STEPS * BATCH / dt:.0f} time steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""A deep narrow model (96 residual blocks of LayerNorm and two Linear layers, width 256, batch 256) trained
with AdamW(foreach=False): the optimizer walks its 576 parameter tensors one by one, a dozen small kernels
each, after a forward and backward pass of small kernels too."""

import argparse
import time

import torch

from gputriage import step

BLOCKS, WIDTH, BATCH = 96, 256, 256


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.up = torch.nn.Linear(WIDTH, 4 * WIDTH)
        self.down = torch.nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[Block() for _ in range(BLOCKS)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)

    def train() -> None:
        x = torch.randn(BATCH, WIDTH, device="cuda")
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * BATCH / dt:.1f} samples/s, {n / dt:.1f} steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

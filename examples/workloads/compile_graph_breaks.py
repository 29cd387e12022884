"""A bf16 MLP under `torch.compile` whose forward reads a value back (`.item()`) to decide a branch, and is given a
new batch size every few steps with `dynamic=False`: dynamo breaks the graph at the read, recompiles the forward for
each new shape and the code after the read for each value read (it guards on it), up to its recompile limit, past
which they run eagerly, silently. host_bound (the host compiles while the GPU waits), with the graph breaks and
recompilations named where they happen."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH = 6, 2048


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[: LAYERS // 2]:
            x = torch.nn.functional.gelu(layer(x))
        # a data-dependent branch: a graph break (outside the loops: inside one, dynamo would give up on the whole
        # forward and run it eagerly)
        if x.mean().item() > 10.0:
            x = x * 0.5
        for layer in self.layers[LAYERS // 2 :]:
            x = torch.nn.functional.gelu(layer(x))
        return x


def main(seconds: float = 10.0) -> None:
    model = torch.compile(Net().cuda(), dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        batch = 256 + 64 * ((n // 3) % 12)
        x = torch.randn(batch, WIDTH, device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=batch)
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Graph message passing: 2 M nodes with 128 fp32 features, 16 M random edges; each layer gathers the
source nodes' features and sums them into the destinations with `index_add_` (scattered reads and
atomic adds), then a small linear layer. Three layers per step."""

import argparse
import time

import torch

from gputriage import step

NODES, EDGES, DIM, LAYERS = 2_000_000, 16_000_000, 128, 3


def main(seconds: float = 10.0) -> None:
    src = torch.randint(0, NODES, (EDGES,), device="cuda")
    dst = torch.randint(0, NODES, (EDGES,), device="cuda")
    x0 = torch.randn(NODES, DIM, device="cuda")
    lins = [torch.nn.Linear(DIM, DIM).cuda() for _ in range(LAYERS)]

    @torch.inference_mode()
    def forward() -> torch.Tensor:
        x = x0
        for lin in lins:
            agg = torch.zeros_like(x).index_add_(0, dst, x[src])
            x = torch.relu(lin(agg))
        return x

    for _ in range(2):
        forward()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        forward()
        n += 1
        step()
    torch.cuda.synchronize()
    print(f"throughput: {n * LAYERS * EDGES / (time.perf_counter() - t0) / 1e9:.2f} G edges/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

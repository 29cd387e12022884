"""A small model served from a CUDA graph: a 4-layer bf16 MLP of width 1024 on batches of 32, captured once
and replayed 200 times per step. The graph removes the launch overhead, so the GPU runs back to back, but
each GEMM of 32x1024x1024 covers a few of the GPU's SMs."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH, REPLAYS = 4, 1024, 32, 200


def main(seconds: float = 10.0) -> None:
    kw = {"device": "cuda", "dtype": torch.bfloat16}
    weights = [torch.randn(WIDTH, WIDTH, **kw) * 0.03 for _ in range(LAYERS)]
    x = torch.randn(BATCH, WIDTH, **kw)

    def forward() -> torch.Tensor:
        h = x
        for w in weights:
            h = torch.relu(h @ w)
        return h

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        forward()
    graph.replay()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(REPLAYS):
            graph.replay()
        torch.cuda.synchronize()
        n += 1
        step(samples=BATCH * REPLAYS)
    dt = time.perf_counter() - t0
    flops = 2 * BATCH * WIDTH * WIDTH * LAYERS * REPLAYS * n
    print(f"throughput: {n * REPLAYS * BATCH / dt:.0f} samples/s, {flops / dt / 1e12:.1f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

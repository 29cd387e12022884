"""A compiled transformer block fed sequences of a new length at every step, compiled with
`dynamic=False` and the recompile limit raised so that it never falls back to eager: each step
recompiles (Dynamo traces, Inductor generates and builds kernels) while the GPU waits."""

import argparse
import time

import torch

from gputriage import step

D, HEADS, BATCH = 1024, 16, 16


def main(seconds: float = 10.0) -> None:
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 100_000)
    block = torch.nn.TransformerEncoderLayer(D, HEADS, 4 * D, batch_first=True).cuda().to(torch.bfloat16)
    block.eval()
    compiled = torch.compile(block, dynamic=False)
    t0, steps, tokens = time.perf_counter(), 0, 0
    length = 64
    with torch.inference_mode():
        while time.perf_counter() - t0 < seconds:
            x = torch.randn(BATCH, length, D, device="cuda", dtype=torch.bfloat16)
            for _ in range(20):
                compiled(x)
            torch.cuda.synchronize()
            steps += 1
            tokens += 20 * BATCH * length
            step(tokens=20 * BATCH * length)
            length += 8  # a length never seen before: a new graph
    dt = time.perf_counter() - t0
    print(f"throughput: {tokens / dt:.1f} tokens/s, {steps / dt:.2f} new lengths/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

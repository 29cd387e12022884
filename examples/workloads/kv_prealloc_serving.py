"""A server that, like vLLM with `gpu_memory_utilization=0.95`, takes most of the GPU's memory for its KV-cache
pool at start (96% of VRAM in use from then on), then runs batched prefill: 8 bf16 layers of 8192x8192 on
8,192 tokens at a time. Nothing is allocated or freed after start."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, TOKENS, POOL_FRACTION = 8, 8192, 8192, 0.96


def main(seconds: float = 10.0) -> None:
    kw = {"device": "cuda", "dtype": torch.bfloat16}
    weights = [torch.randn(D, D, **kw) * 0.01 for _ in range(LAYERS)]
    x = torch.randn(TOKENS, D, **kw)
    y = torch.empty_like(x)
    free, total = torch.cuda.mem_get_info()
    pool_bytes = int(free - (1 - POOL_FRACTION) * total)
    pool = torch.empty(pool_bytes // 2, **kw)  # the KV-cache pool, sized from what is left
    print(f"pool: {pool.numel() * 2 / 2**30:.1f} GiB, VRAM in use {1 - torch.cuda.mem_get_info()[0] / total:.1%}")

    @torch.inference_mode()
    def prefill() -> None:
        a, b = x, y
        for w in weights:
            torch.matmul(a, w, out=b)
            a, b = b, a

    for _ in range(3):
        prefill()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        prefill()
        n += 1
        step(tokens=TOKENS)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * TOKENS / dt:.0f} tokens/s, {2 * TOKENS * D * D * LAYERS * n / dt / 1e12:.0f} TFLOP/s")
    del pool


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

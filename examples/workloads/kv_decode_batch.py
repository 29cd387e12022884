"""Batched token generation against a preallocated KV cache: 64 sequences, 8 layers, 32 heads of 128,
4,096 cached positions (34 GiB of cache in bf16): each token reads every layer's cache through SDPA with
a query of length 1, plus the projections for the batch of 64."""

import argparse
import time

import torch
import torch.nn.functional as F

from gputriage import step

BATCH, LAYERS, HEADS, HEAD_DIM, CONTEXT = 64, 8, 32, 128, 4096
D = HEADS * HEAD_DIM


def main(seconds: float = 10.0) -> None:
    kw = {"device": "cuda", "dtype": torch.bfloat16}
    cache_k = [torch.randn(BATCH, HEADS, CONTEXT, HEAD_DIM, **kw) for _ in range(LAYERS)]
    cache_v = [torch.randn(BATCH, HEADS, CONTEXT, HEAD_DIM, **kw) for _ in range(LAYERS)]
    qkv = [torch.randn(D, 3 * D, **kw) * 0.01 for _ in range(LAYERS)]
    out = [torch.randn(D, D, **kw) * 0.01 for _ in range(LAYERS)]
    x0 = torch.randn(BATCH, D, **kw)

    @torch.inference_mode()
    def token() -> torch.Tensor:
        x = x0
        for layer in range(LAYERS):
            q = (x @ qkv[layer])[:, :D].view(BATCH, HEADS, 1, HEAD_DIM)
            a = F.scaled_dot_product_attention(q, cache_k[layer], cache_v[layer])
            x = x + a.reshape(BATCH, D) @ out[layer]
        return x

    for _ in range(5):
        token()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            token()
        n += 10
        step(tokens=10 * BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    cache_bytes = 2 * LAYERS * BATCH * HEADS * CONTEXT * HEAD_DIM * 2
    print(f"throughput: {n * BATCH / dt:.1f} tokens/s, {n * cache_bytes / dt / 1e9:.0f} GB/s of cache")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""A mixture-of-experts model served with routing written in Python: 4 layers of 16 experts (bf16 MLPs
1024 -> 4096 -> 1024), top-1 gating over 4,096 tokens; for each expert `(choice == e).nonzero()` picks its
tokens (the host waits for the GPU at every expert), the expert runs on them and its output is added back."""

import argparse
import time

import torch

from gputriage import step

LAYERS, EXPERTS, D, FF, TOKENS = 4, 16, 1024, 4096, 4096


def main(seconds: float = 10.0) -> None:
    kw = {"device": "cuda", "dtype": torch.bfloat16}
    gates = [torch.randn(D, EXPERTS, **kw) * 0.02 for _ in range(LAYERS)]
    w1 = [[torch.randn(D, FF, **kw) * 0.02 for _ in range(EXPERTS)] for _ in range(LAYERS)]
    w2 = [[torch.randn(FF, D, **kw) * 0.02 for _ in range(EXPERTS)] for _ in range(LAYERS)]

    @torch.inference_mode()
    def forward(x: torch.Tensor) -> torch.Tensor:
        for layer in range(LAYERS):
            choice = (x @ gates[layer]).argmax(dim=-1)
            out = torch.zeros_like(x)
            for e in range(EXPERTS):
                idx = (choice == e).nonzero().squeeze(-1)
                if idx.numel() == 0:
                    continue
                h = torch.nn.functional.gelu(x[idx] @ w1[layer][e]) @ w2[layer][e]
                out.index_add_(0, idx, h)
            x = x + out
        return x

    x0 = torch.randn(TOKENS, D, **kw)
    for _ in range(3):
        forward(x0)
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        forward(x0)
        n += 1
        step(tokens=TOKENS)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * TOKENS / dt:.0f} tokens/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

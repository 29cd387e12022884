"""Long-context training: a 4-layer transformer of width 1024 (16 heads) on sequences of 8,192 tokens,
batch 2, causal attention through scaled_dot_product_attention, bf16 autocast, fused AdamW."""

import argparse
import time

import torch
import torch.nn.functional as F

from gputriage import step

LAYERS, D, HEADS, SEQ, BATCH, VOCAB = 4, 1024, 16, 8192, 2, 32000
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.out = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.up, self.down = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        x = x + self.out(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, D))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(
        torch.nn.Embedding(VOCAB, D),
        *[Block() for _ in range(LAYERS)],
        torch.nn.LayerNorm(D),
        torch.nn.Linear(D, VOCAB),
    ).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEV == "cuda")
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), device=DEV)

    def train() -> None:
        with torch.autocast(DEV, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        F.cross_entropy(logits.float().view(-1, VOCAB), tokens[:, 1:].reshape(-1)).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        train()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += BATCH * SEQ
        step(tokens=BATCH * SEQ)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} tokens/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Greedy generation with a small decoder (12 layers, width 1024, batch 4, 32k vocabulary): each new token
attends to a KV cache grown with torch.cat, and the loop checks after every token whether all sequences
have produced their end token, as generation loops do."""

import argparse
import time

import torch
import torch.nn.functional as F

from gputriage import step

LAYERS, D, HEADS, VOCAB, BATCH, PROMPT, NEW, EOS = 12, 1024, 16, 32000, 4, 128, 256, 2
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.out = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.up, self.down = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)

    def forward(self, x, cache):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, D))
        x = x + self.down(F.gelu(self.up(self.ln2(x))))
        return x, (k, v)


def main(seconds: float = 10.0) -> None:
    emb = torch.nn.Embedding(VOCAB, D)
    blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
    ln_f, head = torch.nn.LayerNorm(D), torch.nn.Linear(D, VOCAB, bias=False)
    for m in (emb, blocks, ln_f, head):
        m.to(DEV, torch.bfloat16).eval()

    @torch.inference_mode()
    def generate(prompt: torch.Tensor) -> int:
        x, caches = emb(prompt), [None] * LAYERS
        done = torch.zeros(BATCH, dtype=torch.bool, device=DEV)
        for i in range(NEW):
            h = x
            for j, blk in enumerate(blocks):
                h, caches[j] = blk(h, caches[j])
            tok = head(ln_f(h[:, -1])).argmax(-1)
            done |= tok == EOS
            if done.all():
                return i + 1
            x = emb(tok)[:, None]
        return NEW

    prompt = torch.randint(3, VOCAB, (BATCH, PROMPT), device=DEV)
    generate(prompt)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        made = generate(prompt) * BATCH
        n += made
        step(tokens=made)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} tokens/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

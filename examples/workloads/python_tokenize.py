"""A text classifier fed by a tokenizer written in Python on the training thread: each batch of 64 documents
(about 1,500 words each, made up in memory) is lower-cased, split on whitespace and punctuation, mapped to ids
through a dict and padded to 512, then a 4-layer bf16 transformer encoder (width 512) trains on it."""

import argparse
import random
import re
import time

import torch

from gputriage import step

BATCH, WORDS, SEQ, VOCAB, WIDTH = 64, 1500, 512, 30_000, 512
SPLIT = re.compile(r"[\s,.;:!?()\"']+")


def main(seconds: float = 10.0) -> None:
    rnd = random.Random(0)
    words = [
        "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(VOCAB - 2)
    ]
    vocab = {w: i + 2 for i, w in enumerate(words)}
    punct = [" ", " ", " ", ", ", ". ", "; "]

    def document() -> str:
        return "".join(rnd.choice(words).capitalize() + rnd.choice(punct) for _ in range(WORDS))

    def batch() -> torch.Tensor:
        ids = torch.zeros(BATCH, SEQ, dtype=torch.long)
        for row in range(BATCH):
            tokens = [vocab.get(w, 1) for w in SPLIT.split(document().lower()) if w][:SEQ]
            ids[row, : len(tokens)] = torch.tensor(tokens)
        return ids

    layer = torch.nn.TransformerEncoderLayer(WIDTH, 8, 4 * WIDTH, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, WIDTH), torch.nn.TransformerEncoder(layer, 4)).cuda()
    head = torch.nn.Linear(WIDTH, 2).cuda()
    opt = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-4, fused=True)

    def train() -> None:
        ids = batch().cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = head(model(ids)[:, 0]).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):
        train()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * BATCH / dt:.1f} documents/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

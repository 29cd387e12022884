"""Recommendation scoring: 8 embedding tables of 4 M rows x 64 (bf16, 4 GiB in all), each looked up by
bags of 40 random ids (summed) for batches of 32,768 users, then a small MLP scores each user."""

import argparse
import time

import torch

from gputriage import step

TABLES, ROWS, DIM, BATCH, BAG = 8, 4_000_000, 64, 32768, 40
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    tables = [torch.nn.EmbeddingBag(ROWS, DIM, mode="sum").to(DEV, torch.bfloat16).eval() for _ in range(TABLES)]
    mlp = (
        torch.nn.Sequential(torch.nn.Linear(TABLES * DIM, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
        .to(DEV, torch.bfloat16)
        .eval()
    )
    ids = [torch.randint(0, ROWS, (BATCH, BAG), device=DEV) for _ in range(TABLES)]

    @torch.inference_mode()
    def score() -> torch.Tensor:
        return mlp(torch.cat([t(i) for t, i in zip(tables, ids)], 1)).sigmoid()

    for _ in range(3):
        score()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            score()
        n += 10 * BATCH
        step(samples=10 * BATCH)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} users/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

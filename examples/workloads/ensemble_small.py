"""Inference with an ensemble of 64 small classifiers (MLPs 256-512-512-10) evaluated one after the other
on each batch of 512 feature vectors; the averaged predictions are copied to the host."""

import argparse
import time

import torch

from gputriage import step

MODELS, BATCH, FEATURES = 64, 512, 256
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    models = [
        torch.nn.Sequential(
            torch.nn.Linear(FEATURES, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 10),
        )
        .to(DEV)
        .eval()
        for _ in range(MODELS)
    ]
    x = torch.randn(BATCH, FEATURES, device=DEV)

    @torch.inference_mode()
    def predict() -> torch.Tensor:
        probs = torch.stack([m(x).softmax(-1) for m in models]).mean(0)
        return probs.argmax(-1).cpu()

    for _ in range(5):
        predict()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        predict()
        n += BATCH
        step(samples=BATCH)
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Feature extraction: a conv net in bf16 computes 256-channel feature maps of 64x64 for batches of 64 images,
and every batch's features are copied to the host (pageable, float32) into a list kept in memory."""

import argparse
import time

import torch

from gputriage import step

BATCH, SIDE, KEEP = 64, 256, 8
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 256, 3, stride=2, padding=1),
        torch.nn.ReLU(),
    ).to(DEV)
    net = net.to(torch.bfloat16).eval()
    images = torch.randn(BATCH, 3, SIDE, SIDE, device=DEV, dtype=torch.bfloat16)
    kept: list = []

    @torch.inference_mode()
    def extract() -> None:
        kept.append(net(images).float().cpu().numpy())
        del kept[:-KEEP]

    extract()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        extract()
        n += BATCH
        step(samples=BATCH)
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} images/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Images held in memory, augmented in 4 DataLoader workers (random crop, flip, colour jitter, noise and
normalization in numpy), feeding a small conv net trained in bf16 at batch 256: nothing is read from files."""

import argparse
import time

import numpy as np
import torch

from gputriage import step

IMAGES, SIDE, CROP, BATCH, WORKERS = 2000, 176, 160, 256, 4
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class InMemory(torch.utils.data.Dataset):
    def __init__(self) -> None:
        self.images = np.random.default_rng(0).integers(0, 255, (IMAGES, SIDE, SIDE, 3), dtype=np.uint8)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        rng = np.random.default_rng()
        y, x = rng.integers(0, SIDE - CROP, 2)
        im = self.images[i, y : y + CROP, x : x + CROP].astype(np.float32) / 255.0
        if rng.random() < 0.5:
            im = im[:, ::-1]
        im = im * rng.uniform(0.8, 1.2, 3) + rng.normal(0.0, 0.02, im.shape)
        im = (im - im.mean((0, 1))) / (im.std((0, 1)) + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(im.transpose(2, 0, 1), dtype=np.float32)), i % 100


def main(seconds: float = 10.0) -> None:
    loader = torch.utils.data.DataLoader(
        InMemory(),
        batch_size=BATCH,
        shuffle=True,
        num_workers=WORKERS,
        pin_memory=True,
        persistent_workers=True,
        drop_last=True,
    )
    layers = [
        m
        for c in (64, 128, 256)
        for m in (torch.nn.LazyConv2d(c, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
    ]
    net = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.LazyLinear(100)).to(
        DEV
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for images, labels in loader:
            with torch.autocast(DEV, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(
                    net(images.to(DEV, non_blocking=True)), labels.to(DEV, non_blocking=True)
                )
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            n += BATCH
            step(samples=BATCH)
            if time.perf_counter() - t0 >= seconds:
                break
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Images read from .npy files by a DataLoader with 2 workers (random crop, float conversion and
normalization in each worker), feeding a small conv net trained in bf16 at batch 256."""

import argparse
import os
import tempfile
import time

import numpy as np
import torch

from gputriage import step

FILES, BATCH, WORKERS = 1024, 256, 2
DEV = "cuda" if torch.cuda.is_available() else "cpu"
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


class Images(torch.utils.data.Dataset):
    def __init__(self, folder: str) -> None:
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        im = np.load(self.paths[i])
        y, x = np.random.randint(0, 32, 2)
        im = (im[y : y + 224, x : x + 224].astype(np.float32) / 255.0 - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(im.transpose(2, 0, 1))), i % 1000


def main(seconds: float = 10.0) -> None:
    folder = tempfile.mkdtemp(prefix="images-")
    rng = np.random.default_rng(0)
    for i in range(FILES):
        np.save(os.path.join(folder, f"{i:05d}.npy"), rng.integers(0, 255, (256, 256, 3), dtype=np.uint8))
    loader = torch.utils.data.DataLoader(
        Images(folder),
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
    net = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.LazyLinear(1000)).to(
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
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    os.rmdir(folder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""Large batches through a DataLoader with pinned memory: 4 workers hand over batches of 64 float32 images of
3x512x512 (192 MiB a batch, each sample a copy of an in-memory tensor, no augmentation), which the loader's
pin-memory thread copies into pinned memory in the training process; a small conv net in bf16 then runs on
them. The input pipeline (its pinning thread) sets the pace."""

import argparse
import time

import torch

from gputriage import step

IMAGES, SIDE, BATCH, WORKERS = 256, 512, 64, 4
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class InMemory(torch.utils.data.Dataset):
    def __init__(self) -> None:
        self.images = torch.randn(IMAGES, 3, SIDE, SIDE)

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        return self.images[i % IMAGES].clone(), i % 100


def main(seconds: float = 10.0) -> None:
    loader = torch.utils.data.DataLoader(
        InMemory(), batch_size=BATCH, num_workers=WORKERS, pin_memory=True, persistent_workers=True, drop_last=True
    )
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=4, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 100),
    ).to(DEV)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    t0, n = time.perf_counter(), 0
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
    dt = time.perf_counter() - t0
    print(f"throughput: {n / dt:.1f} images/s, {n * 3 * SIDE * SIDE * 4 / dt / 1e9:.2f} GB/s of input")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

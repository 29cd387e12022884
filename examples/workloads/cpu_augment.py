"""Images augmented on the training thread (no DataLoader workers): random crops, flips and a per-pixel
colour jitter in numpy, then a small conv net in bf16 on the GPU."""

import time

import numpy as np
import torch

from gputriage import step

BATCH = 64


def batch(rng: np.random.Generator) -> torch.Tensor:
    images = rng.integers(0, 255, size=(BATCH, 256, 256, 3), dtype=np.uint8)
    out = np.empty((BATCH, 3, 224, 224), dtype=np.float32)
    for i in range(BATCH):
        y, x = rng.integers(0, 32, 2)
        im = images[i, y : y + 224, x : x + 224].astype(np.float32) / 255.0
        if rng.random() < 0.5:
            im = im[:, ::-1]
        im = im * rng.uniform(0.8, 1.2, size=3) + rng.normal(0, 0.02, size=im.shape)
        out[i] = im.transpose(2, 0, 1)
    return torch.from_numpy(out)


def main(seconds: float = 10.0) -> None:
    layers = [
        m
        for c in (64, 128, 256)
        for m in (torch.nn.LazyConv2d(c, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
    ]
    net = torch.nn.Sequential(*layers, torch.nn.Flatten(), torch.nn.LazyLinear(1000)).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    rng = np.random.default_rng(0)

    def train(b: torch.Tensor) -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(b.cuda(non_blocking=True)).float().logsumexp(1).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train(batch(rng))
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train(batch(rng))
        n += BATCH
        step(samples=BATCH)
    torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} samples/s")


if __name__ == "__main__":
    main()

"""Online inference of a ResNet-style network (16 residual blocks of 3x3 convolutions with batch norm) on one
224x224 image at a time in eager mode; each prediction's class id is read back."""

import argparse
import time

import torch

from gputriage import step

BLOCKS, WIDTH = 16, 128
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(WIDTH, WIDTH, 3, padding=1, bias=False), torch.nn.BatchNorm2d(WIDTH)
        self.c2, self.b2 = torch.nn.Conv2d(WIDTH, WIDTH, 3, padding=1, bias=False), torch.nn.BatchNorm2d(WIDTH)

    def forward(self, x):
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


def main(seconds: float = 10.0) -> None:
    net = (
        torch.nn.Sequential(
            torch.nn.Conv2d(3, WIDTH, 7, stride=4, padding=3),
            torch.nn.ReLU(),
            *[Block() for _ in range(BLOCKS)],
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(WIDTH, 1000),
        )
        .to(DEV)
        .eval()
    )
    image = torch.randn(1, 3, 224, 224, device=DEV)

    @torch.inference_mode()
    def predict() -> int:
        with torch.autocast(DEV, dtype=torch.bfloat16):
            return int(net(image).argmax())

    for _ in range(5):
        predict()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        predict()
        n += 1
        step(samples=1)
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} images/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

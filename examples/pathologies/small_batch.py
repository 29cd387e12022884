"""Batch too small to fill the SMs: the GPU is 'busy' by nvidia-smi while most SMs idle.

Fix: a larger batch (here 128x), the same model and the same number of launches.
"""

import torch
from torch import nn

WIDTH = 512


def build(fixed: bool):
    batch = 1024 if fixed else 8
    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(6)]).cuda().half().eval()
    x = torch.randn(batch, WIDTH, device="cuda", dtype=torch.float16)

    def step() -> float:
        with torch.no_grad():
            for _ in range(20):
                model(x)
        return 20 * batch

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

"""Batch too small to fill the SMs: 20 forward passes of a small fp16 MLP at batch 8, replayed as
one CUDA graph (so launches cost nothing). The GPU is 'busy' by nvidia-smi, but each kernel has
fewer thread blocks than the GPU has SMs.

Fix: a larger batch (1024): the same graph, the same number of kernels, 128x the work each.
"""

import torch
from torch import nn

WIDTH, PASSES = 512, 20


def build(fixed: bool):
    batch = 1024 if fixed else 8
    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(6)]).cuda().half().eval()
    x = torch.randn(batch, WIDTH, device="cuda", dtype=torch.float16)
    from _loop import capture_graph

    def passes() -> None:
        for _ in range(PASSES):
            model(x)

    graph = capture_graph(passes)

    def step() -> float:
        graph.replay()
        return PASSES * batch

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

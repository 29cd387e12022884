"""Kernel-launch-bound: a deep, narrow model at batch 1; every kernel is shorter than its launch.

Fix: capture the forward pass in a CUDA graph (one launch replays every kernel).
"""

import torch
from torch import nn

DEPTH, WIDTH = 48, 256


def build(fixed: bool):
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.LayerNorm(WIDTH), nn.GELU()]
    model = nn.Sequential(*layers).cuda().eval()
    x = torch.randn(1, WIDTH, device="cuda")
    if not fixed:
        def step() -> float:
            with torch.no_grad():
                model(x)
            return 1

        return step, "inferences"
    from _loop import capture_graph

    graph = capture_graph(lambda: model(x))

    def step() -> float:
        graph.replay()
        return 1

    return step, "inferences"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

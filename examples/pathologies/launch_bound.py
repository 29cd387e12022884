"""Kernel-launch-bound: a deep model served one request at a time (batch 1); every kernel is
shorter than its launch.

Fix: batch requests together and capture the forward pass in a CUDA graph (one launch replays
every kernel).
"""

import torch
from torch import nn

DEPTH, WIDTH, BATCHED = 48, 1024, 4096


def build(fixed: bool):
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.LayerNorm(WIDTH), nn.GELU()]
    model = nn.Sequential(*layers).cuda().bfloat16().eval()
    x = torch.randn(BATCHED if fixed else 1, WIDTH, device="cuda", dtype=torch.bfloat16)
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
        return BATCHED

    return step, "inferences"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

"""`.item()` inside the loop: each call waits for the GPU to finish everything queued.

Fix: keep running values on the GPU and read them once in a while.
"""

import torch
from torch import nn

BATCH, WIDTH = 64, 1024


def build(fixed: bool):
    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(8)]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(BATCH, WIDTH, device="cuda")
    total = torch.zeros((), device="cuda")
    n = [0]

    def step() -> float:
        nonlocal total
        h = x
        for layer in model:
            h = layer(h)
            if not fixed:
                assert torch.isfinite(h).all().item()  # a sync per layer
        loss = h.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if fixed:
            total = total + loss.detach()
            n[0] += 1
            if n[0] % 100 == 0:
                total.item()
        else:
            total = total + loss.item()
        return BATCH

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

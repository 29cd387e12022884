"""`.item()` inside the loop: each call waits for the GPU to finish everything queued, so the
host's per-step Python work (logging, bookkeeping) can no longer overlap GPU work: the GPU idles
while the host catches up after every sync.

Fix: keep running values on the GPU (NaN checks and loss sums as tensors) and read them every
N steps; the same Python bookkeeping then overlaps GPU work.
"""

import statistics

import torch
from torch import nn

BATCH, WIDTH, LOG_EVERY = 16384, 4096, 50


def bookkeeping(history: list) -> None:
    # the kind of per-step Python a training loop does: running statistics, a log line (a few ms)
    window = history[-150000:]
    f"step {len(history)} mean {statistics.fmean(window):.4f} p50 {sorted(window)[len(window) // 2]:.4f}"


def build(fixed: bool):
    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH)).cuda().bfloat16()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16)
    history = [0.0] * 150000
    pending = []

    def step() -> float:
        h = x
        for layer in model:
            h = layer(h)
            if not fixed:
                assert torch.isfinite(h).all().item()  # a NaN check that syncs per layer
        loss = h.float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if fixed:
            pending.append(loss.detach())
            if len(pending) == LOG_EVERY:
                history.extend(torch.stack(pending).tolist())  # one sync every LOG_EVERY steps
                pending.clear()
        else:
            history.append(loss.item())
        bookkeeping(history)
        return BATCH

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

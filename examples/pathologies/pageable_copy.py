"""Pageable host→device copies: each batch is copied from ordinary (pageable) host memory.

Fix: pinned host buffers and `non_blocking=True` copies (DataLoader(pin_memory=True) does this).
"""

import torch

BATCH_BYTES = 256 * 2**20


def build(fixed: bool):
    n = BATCH_BYTES // 4
    host = [torch.randn(n) for _ in range(2)]
    if fixed:
        host = [h.pin_memory() for h in host]
    dev = torch.empty(n, device="cuda")
    w = torch.randn(n, device="cuda")
    i = [0]

    def step() -> float:
        src = host[i[0] % 2]
        i[0] += 1
        dev.copy_(src, non_blocking=fixed)
        torch.addcmul(dev, dev, w, value=0.5, out=dev)  # a little work on the batch
        return BATCH_BYTES / 1e9

    return step, "GB"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

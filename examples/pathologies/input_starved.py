"""Input pipeline on one CPU core: numpy preprocessing of every batch inside the training loop,
while the GPU waits.

Fix (the seed's decision): move preprocessing into DataLoader workers, pin memory, prefetch.
"""

import numpy as np
import torch
from torch import nn

BATCH, FEATURES, HIDDEN = 1024, 1024, 16384


def preprocess(rng: np.random.Generator) -> np.ndarray:
    raw = rng.standard_normal((BATCH, FEATURES), dtype=np.float32)
    for _ in range(2):  # a stand-in for decoding/augmentation: pure CPU work
        raw = np.tanh(raw) * 1.01 + np.sin(raw) * 0.01
    return raw


class Batches(torch.utils.data.IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rng = np.random.default_rng(info.id if info else 0)
        while True:
            yield torch.from_numpy(preprocess(rng))


def build(fixed: bool):
    on_gpu = {"device": "cuda", "dtype": torch.bfloat16}  # 570 M weights: initialized on the GPU, not the CPU
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN, **on_gpu), nn.GELU(), nn.Linear(HIDDEN, HIDDEN, **on_gpu),
                          nn.GELU(), nn.Linear(HIDDEN, HIDDEN, **on_gpu), nn.GELU(), nn.Linear(HIDDEN, FEATURES, **on_gpu))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if fixed:
        loader = iter(torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=12, pin_memory=True,
                                                  prefetch_factor=4, persistent_workers=True))
        next_batch = lambda: next(loader)  # noqa: E731
    else:
        rng = np.random.default_rng(0)
        next_batch = lambda: torch.from_numpy(preprocess(rng))  # noqa: E731

    def step() -> float:
        x = next_batch().cuda(non_blocking=True).bfloat16()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return BATCH

    return step, "samples"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

"""Input pipeline on one CPU core: every batch is read from a file and preprocessed with numpy
inside the training loop, while the GPU waits.

Fix (the seed's decision): move loading and preprocessing into DataLoader workers, pin memory,
prefetch.
"""

import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

BATCH, FEATURES, HIDDEN, SHARDS = 1024, 1024, 16384, 32


def write_dataset() -> Path:
    """A small on-disk dataset: SHARDS files of one batch of raw float32 features each (128 MiB)."""
    folder = Path(tempfile.mkdtemp(prefix="pathology-input-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    rng = np.random.default_rng(0)
    for i in range(SHARDS):
        rng.standard_normal((BATCH, FEATURES), dtype=np.float32).tofile(folder / f"shard{i:03}.bin")
    return folder


def load(folder: Path, i: int) -> np.ndarray:
    raw = np.fromfile(folder / f"shard{i % SHARDS:03}.bin", dtype=np.float32).reshape(BATCH, FEATURES)
    for _ in range(5):  # a stand-in for decoding/augmentation: pure CPU work
        raw = np.tanh(raw) * 1.01 + np.sin(raw) * 0.01
    return raw


class Batches(torch.utils.data.IterableDataset):
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        i, stride = (info.id, info.num_workers) if info else (0, 1)
        while True:
            yield torch.from_numpy(load(self.folder, i))
            i += stride


def build(fixed: bool):
    folder = write_dataset()
    on_gpu = {"device": "cuda", "dtype": torch.bfloat16}  # 570 M weights: initialized on the GPU, not the CPU
    model = nn.Sequential(
        nn.Linear(FEATURES, HIDDEN, **on_gpu),
        nn.GELU(),
        nn.Linear(HIDDEN, HIDDEN, **on_gpu),
        nn.GELU(),
        nn.Linear(HIDDEN, HIDDEN, **on_gpu),
        nn.GELU(),
        nn.Linear(HIDDEN, FEATURES, **on_gpu),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if fixed:
        loader = iter(
            torch.utils.data.DataLoader(
                Batches(folder),
                batch_size=None,
                num_workers=12,
                pin_memory=True,
                prefetch_factor=4,
                persistent_workers=True,
            )
        )
        next_batch = lambda: next(loader)
    else:
        count = iter(range(2**62))
        next_batch = lambda: torch.from_numpy(load(folder, next(count)))

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

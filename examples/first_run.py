"""A first job for `gputriage run`, on any machine: a small model trained for a few seconds, each batch made and
augmented on the training thread while the model waits for it.

    gputriage run -- python3 examples/first_run.py                 # batches made on the training thread
    gputriage run -- python3 examples/first_run.py --workers 4     # made by 4 DataLoader workers, pinned

With torch and a CUDA GPU it trains on the GPU; with torch alone, on the CPU; without torch, a pure-Python model
stands in. It reports its samples with `gputriage.step()`, so `gputriage run` shows its throughput.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Callable, Iterator

try:  # the loop's progress, read by `gputriage run`; free when nothing listens
    from gputriage import step as report_step
except ImportError:
    report_step = None
try:
    import torch
    from torch.utils.data import IterableDataset
except ImportError:  # the pure-Python model stands in
    torch = None
    IterableDataset = object

BATCH, FEATURES = 256, 1024


def torch_loop(workers: int) -> tuple[Callable[[], int], str]:
    """A 4-layer MLP in bf16 on the GPU (fp32 on the CPU), fed batches augmented on the host."""
    from torch import nn

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    hidden = 4096 if device == "cuda" else 256
    layers = [nn.Linear(FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, FEATURES))
    model = model.to(device, dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches: Iterator[Any]
    if workers > 0:
        loader = torch.utils.data.DataLoader(
            Augmented(), batch_size=None, num_workers=workers, pin_memory=device == "cuda", prefetch_factor=4
        )
        batches = iter(loader)
    else:
        batches = iter(Augmented())

    def step() -> int:
        x = next(batches).to(device, dtype, non_blocking=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return BATCH

    where = f"{device} ({torch.cuda.get_device_name(0)})" if device == "cuda" else "the CPU (no CUDA GPU)"
    return step, f"torch {torch.__version__} on {where}"


class Augmented(IterableDataset):  # type: ignore[misc]
    """Endless batches of random features, augmented on the CPU (a stand-in for decoding and cropping)."""

    def __iter__(self) -> Iterator[Any]:
        g = torch.Generator().manual_seed(0)
        while True:
            x = torch.randn(BATCH, FEATURES, generator=g)
            for _ in range(8):
                x = torch.tanh(x) * 1.01 + torch.sin(x) * 0.01
            yield x


def python_loop() -> tuple[Callable[[], int], str]:
    """Without torch: a linear model fitted by SGD in pure Python, on small batches."""
    rng = random.Random(0)
    w = [0.0] * 64

    def step() -> int:
        for _ in range(16):
            x = [rng.gauss(0, 1) for _ in w]
            err = sum(a * b for a, b in zip(w, x)) - x[0]
            for i, xi in enumerate(x):
                w[i] -= 1e-3 * err * xi
        return 16

    return step, "pure Python (torch is not installed)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to train (default 10)")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers making the batches (torch only)")
    args = parser.parse_args()
    step, what = torch_loop(args.workers) if torch is not None else python_loop()
    print(f"first_run: training with {what} for {args.seconds:g} s", flush=True)
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        n = step()
        done += n
        if report_step is not None:
            report_step(samples=n)
    print(f"first_run: {done / (time.perf_counter() - t0):,.0f} samples/s", flush=True)


if __name__ == "__main__":
    main()

"""Fragmentation: the allocator's cache holds enough free memory, in pieces too small. A first phase caches 1 GiB
buffers until the GPU is nearly full; freed, they stay in PyTorch's cache. Tensors of many sizes (150-450 MiB,
like varying sequence lengths) are then carved out of those cached segments, every other one is freed, and a
2.5 GiB request fits in none of the holes while the device has no room for a new segment.

Expected: memory.fragmented, the planted tensors' line (`# planted`) at the top, fragmentation near 100%.
Fix: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; fewer distinct sizes (pad or bucket lengths).
"""

import random
import time

import torch

GIB = 1 << 30


def busy(seconds: float, a: torch.Tensor) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        (a @ a).sum().item()


def main() -> None:
    a = torch.randn(4096, 4096, device="cuda")
    warm = []
    while torch.cuda.mem_get_info()[0] > 1.5 * GIB:  # the cache fills with 1 GiB segments
        warm.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))
    busy(2.0, a)  # a first phase that runs a while
    del warm  # back to the allocator's cache, not to the GPU
    cached = torch.cuda.memory_reserved()
    rng = random.Random(0)
    pieces = []
    while True:
        pieces.append(torch.empty(rng.randrange(150, 450) << 20, dtype=torch.uint8, device="cuda"))  # planted
        if torch.cuda.memory_reserved() > cached:  # the cached segments are full: a new one was needed
            pieces.pop()
            break
    del pieces[1::2]  # every other one freed: holes between live tensors
    busy(1.0, a)
    big = torch.empty(5 * GIB // 2, dtype=torch.uint8, device="cuda")  # fits in no hole
    print(big.shape, len(pieces))


if __name__ == "__main__":
    main()

"""VRAM near full with allocator churn: variable shapes on an almost-full GPU force the caching
allocator to free and re-allocate (cudaFree/cudaMalloc synchronize the device).

Fix: leave headroom (a smaller resident footprint) and bucket shapes.
"""

import torch


def build(fixed: bool):
    free, total = torch.cuda.mem_get_info()
    keep = 0.60 if fixed else 0.94  # share of VRAM held by "the model"
    ballast = torch.empty(int(total * keep) - (total - free), dtype=torch.uint8, device="cuda")
    headroom = int(total * (1 - keep) * 0.8)
    sizes = [headroom // k for k in (2, 3, 5, 7)] if not fixed else [headroom // 8]
    i = [0]

    def step() -> float:
        size = sizes[i[0] % len(sizes)]
        i[0] += 1
        a = torch.empty(size // 2, dtype=torch.uint8, device="cuda")
        a.fill_(1)
        if not fixed:
            torch.cuda.empty_cache()  # what a near-OOM retry path does
        del a
        return 1

    step.ballast = ballast  # keep it alive
    return step, "steps"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

"""A training loop that calls `torch.cuda.empty_cache()` after every step "to avoid out-of-memory",
with VRAM far from full (an 8-layer bf16 MLP of width 4096, batch 8192, a few GiB in use): the
caching allocator gives its blocks back to the driver and allocates them again at the next step.
`--keep-cache` runs the same loop without it, to measure what it costs."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, BATCH = 8, 4096, 8192


def main(seconds: float = 10.0, keep_cache: bool = False) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())])
    model = model.cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def train() -> None:
        x = torch.randn(BATCH, D, device="cuda", dtype=torch.bfloat16)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
        if not keep_cache:
            torch.cuda.empty_cache()

    for _ in range(3):
        train()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        steps += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    tflops = 6 * BATCH * LAYERS * D * D * steps / dt / 1e12
    print(f"throughput: {steps * BATCH / dt:.1f} samples/s, {tflops:.0f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--keep-cache", action="store_true", help="no empty_cache() (the fix)")
    args = parser.parse_args()
    main(args.seconds, args.keep_cache)

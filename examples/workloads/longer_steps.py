"""A training loop whose steps grow half-way, as a job does when its gradient accumulation goes from 1 micro-batch a
step to 5 (or its sequences get 5x longer): a bf16 MLP (6 layers of 8192, batch 8,192) computes flat out throughout
(compute_bound, the GPU as busy after as before), but each step does five times the work from half-way, so the step
rate falls about 5x. The GPU's regime does not change; the step rate's does (`run.step_rate_changed`)."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH, MICRO_BATCHES_LATER = 6, 8192, 8192, 5


def main(seconds: float = 60.0) -> None:
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(BATCH, WIDTH, device="cuda")
    t0, n = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - t0) < seconds:
        micro = 1 if elapsed < seconds / 2 else MICRO_BATCHES_LATER
        for _ in range(micro):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x).float().pow(2).mean()
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=BATCH * micro)
    torch.cuda.synchronize()
    print(f"{n / (time.perf_counter() - t0):.1f} steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    main(parser.parse_args().seconds)

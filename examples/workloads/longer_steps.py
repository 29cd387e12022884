"""A training loop whose sequences get 5x longer half-way, as a job does when it moves to a longer-context phase of its
schedule: a bf16 MLP (6 layers of 8192) over batches of 1,024 sequences, 8 tokens each, then 40 (8,192 rows a step,
then 40,960). The GPU computes flat out throughout (compute_bound, as busy after as before); each step does five
times the work from half-way, so the step rate, and the samples (sequences) per second, fall about 5x. The GPU's
regime does not change; the step rate's does (`run.step_rate_changed`: the same CPU, more work per step)."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, SEQUENCES, TOKENS, TOKENS_LATER = 6, 8192, 1024, 8, 40


def main(seconds: float = 60.0) -> None:
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    short = torch.randn(SEQUENCES * TOKENS, WIDTH, device="cuda")
    long = torch.randn(SEQUENCES * TOKENS_LATER, WIDTH, device="cuda")
    t0, n = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - t0) < seconds:
        x = short if elapsed < seconds / 2 else long
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=SEQUENCES)  # sequences: no tokens reported, so the samples' rate falls with the steps'
    torch.cuda.synchronize()
    print(f"{n / (time.perf_counter() - t0):.1f} steps/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    main(parser.parse_args().seconds)

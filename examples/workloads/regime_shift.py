"""A training loop that changes regime mid-run, as a long job does when a dataset shard decodes slower: a bf16 MLP
(6 layers of 8192, batch 8,192) computes flat out for the first third (compute_bound), then each step waits for a
batch made on the host (`next_batch`: a 150 ms sleep standing for a shard that decodes slowly; nothing synchronizes,
the GPU drains its queue and waits: input_starved), then computes flat out again (compute_bound). Each regime should
get its own cause, and the change be reported when it happens."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH, SLOW_INPUT_S = 6, 8192, 8192, 0.15


def next_batch(x: torch.Tensor, slow: bool) -> torch.Tensor:
    """The next batch: at once from a fast shard, after SLOW_INPUT_S of decoding from a slow one."""
    if slow:
        time.sleep(SLOW_INPUT_S)
    return x


def main(seconds: float = 180.0) -> None:
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(BATCH, WIDTH, device="cuda")
    t0, n = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - t0) < seconds:
        batch = next_batch(x, slow=seconds / 3 <= elapsed < 2 * seconds / 3)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(batch).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    print(f"throughput: {n * BATCH / (time.perf_counter() - t0):.0f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=180.0)
    main(parser.parse_args().seconds)

"""Training fed the recommended way: batches in pinned host memory, copied to the GPU with
`non_blocking=True` on a side stream one step ahead, into a 4-layer bf16 MLP of width 4096 (hidden
16,384), batch 8,192: 64 MiB sent per step while the GPU computes the previous one."""

import argparse
import time

import torch

from gputriage import step

LAYERS, D, HIDDEN, BATCH, POOL = 4, 4096, 16384, 8192, 4


def main(seconds: float = 10.0) -> None:
    blocks = [
        m for _ in range(LAYERS) for m in (torch.nn.Linear(D, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, D))
    ]
    model = torch.nn.Sequential(*blocks).cuda().to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    host = [torch.randn(BATCH, D, dtype=torch.bfloat16).pin_memory() for _ in range(POOL)]
    copier = torch.cuda.Stream()

    def fetch(i: int) -> tuple[torch.Tensor, torch.cuda.Event]:
        with torch.cuda.stream(copier):
            x = host[i % POOL].to("cuda", non_blocking=True)
            done = torch.cuda.Event()
            done.record(copier)
        return x, done

    def train(x: torch.Tensor) -> None:
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    nxt = fetch(0)
    for i in range(3):
        x, done = nxt
        torch.cuda.current_stream().wait_event(done)
        x.record_stream(torch.cuda.current_stream())
        nxt = fetch(i + 1)
        train(x)
    torch.cuda.synchronize()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        x, done = nxt
        torch.cuda.current_stream().wait_event(done)
        x.record_stream(torch.cuda.current_stream())
        nxt = fetch(steps + 4)
        train(x)
        steps += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    flop = 6 * BATCH * LAYERS * 2 * D * HIDDEN * steps
    print(f"throughput: {steps * BATCH / dt:.1f} samples/s, {flop / dt / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

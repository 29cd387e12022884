"""A training loop sharing its interpreter with a busy Python thread: a bf16 MLP (6 layers of 2048, batch
2,048) trains on the main thread while a metrics thread aggregates and JSON-encodes a large dict of Python
floats without pause. Every kernel launch needs the GIL, which the other thread holds half the time."""

import argparse
import json
import random
import threading
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH = 6, 2048, 2048


def metrics_thread(stop: threading.Event) -> None:
    table = {f"metric_{i}": [random.random() for _ in range(64)] for i in range(2000)}
    while not stop.is_set():
        summary = {k: sum(v) / len(v) for k, v in table.items()}
        json.dumps(summary)


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()) for _ in range(LAYERS)]
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(BATCH, WIDTH, device="cuda")

    def train() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        train()
    torch.cuda.synchronize()
    stop = threading.Event()
    helper = threading.Thread(target=metrics_thread, args=(stop,), daemon=True)
    helper.start()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    stop.set()
    helper.join()
    flops = 6 * BATCH * WIDTH * WIDTH * LAYERS * n
    print(f"throughput: {n * BATCH / dt:.0f} samples/s, {flops / dt / 1e12:.1f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

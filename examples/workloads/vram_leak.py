"""A training loop that keeps every step's predictions on the GPU "for the epoch's metrics": a bf16 MLP
(4 layers of 4096, batch 4,096) trains at full speed while a list grows by a 1 MiB tensor per step, some
hundreds of MiB a second, until the GPU is full."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH, KEPT = 4, 4096, 4096, 128


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()) for _ in range(LAYERS)]
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(BATCH, WIDTH, device="cuda")
    predictions: list[torch.Tensor] = []

    def train() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = out.float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        predictions.append(out[:, :KEPT].detach().clone())  # BATCH x KEPT bf16 = 1 MiB, never freed

    for _ in range(3):
        train()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        train()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    kept = sum(p.numel() * p.element_size() for p in predictions)
    print(
        f"throughput: {n * BATCH / dt:.0f} samples/s, {6 * BATCH * WIDTH * WIDTH * LAYERS * n / dt / 1e12:.0f} "
        f"TFLOP/s; kept {kept / 2**30:.1f} GiB of predictions"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

"""A wide MLP in bf16 under torch.compile (default mode), large batch: compute-bound once compiled."""

import time

import torch

from gputriage import step

D, LAYERS, BATCH = 8192, 4, 8192


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())])
    model = model.cuda().bfloat16()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    compiled = torch.compile(model)
    x = torch.randn(BATCH, D, device="cuda", dtype=torch.bfloat16)

    def one() -> None:
        compiled(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        one()
    torch.cuda.synchronize()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        one()
        n += 1
        step(samples=BATCH)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"throughput: {n * 6 * LAYERS * D * D * BATCH / dt / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    main()

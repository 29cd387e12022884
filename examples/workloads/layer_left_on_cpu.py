"""A model with one layer left on the CPU (a `.cuda()` forgotten on the projection head): a bf16 encoder of
4 layers of 4096 on the GPU, then the activations copied to the host, a fp32 Linear of 4096x4096 computed
there by the CPU's BLAS threads, and the result copied back for the loss. Inference, batch 1,024."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH = 4, 4096, 1024


def main(seconds: float = 10.0) -> None:
    encoder = (
        torch.nn.Sequential(
            *[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.GELU()) for _ in range(LAYERS)]
        )
        .cuda()
        .to(torch.bfloat16)
    )
    head = torch.nn.Linear(WIDTH, WIDTH)  # left on the CPU, in fp32
    x = torch.randn(BATCH, WIDTH, device="cuda", dtype=torch.bfloat16)

    @torch.inference_mode()
    def infer() -> float:
        h = encoder(x)
        out = head(h.float().cpu()).to("cuda")
        return float(out.pow(2).mean())

    for _ in range(2):
        infer()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        infer()
        n += 1
        step(samples=BATCH)
    dt = time.perf_counter() - t0
    print(f"throughput: {n * BATCH / dt:.0f} samples/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

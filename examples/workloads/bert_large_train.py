"""A BERT-large-like encoder (24 layers, width 1024, 16 heads) trained in bf16 on batches of 32 sequences of 512
tokens with fused AdamW: GPU-Util 100%, the SMs busy, at the power limit. The profiler's per-op overhead must not turn
it into launch_bound. Its GEMMs run near the tensor cores' peak and take turns with unfused elementwise kernels (norms,
dropout, residual adds) that take about as much of the GPU's time (a trace: 46-52% against 40-45%): memory-bound
kernels stay possible beside compute_bound."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, HEADS, SEQ, BATCH = 24, 1024, 16, 512, 32


def main(seconds: float = 10.0) -> None:
    layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, batch_first=True, norm_first=True)
    model = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(BATCH, SEQ, WIDTH, device="cuda")
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
        step(samples=BATCH, tokens=BATCH * SEQ)
    torch.cuda.synchronize()
    print(f"throughput: {n * BATCH * SEQ / (time.perf_counter() - t0):.0f} tokens/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

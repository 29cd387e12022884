"""A 12-layer transformer encoder (width 768, 12 heads, sequences of 128 tokens) answering one sequence at a time
in eager mode, fp32 weights under bf16 autocast: hundreds of small kernels per request, each launched from Python.
launch_bound. The profiler's own start (CUPTI, seconds) stalls such a loop: those seconds are the profiler's, not
the workload's."""

import argparse
import time

import torch

from gputriage import step

LAYERS, WIDTH, HEADS, SEQ = 12, 768, 12, 128


def main(seconds: float = 10.0) -> None:
    layer = torch.nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False).cuda().eval()
    x = torch.randn(1, SEQ, WIDTH, device="cuda")
    t0, n = time.perf_counter(), 0
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        while time.perf_counter() - t0 < seconds:
            model(x)
            n += 1
            step(samples=1)
    torch.cuda.synchronize()
    print(f"throughput: {n / (time.perf_counter() - t0):.0f} requests/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)

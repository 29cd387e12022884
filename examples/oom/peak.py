"""A steady peak too close to capacity: fp32 weights take 40% of the GPU and their gradients as much; a few
accumulation steps run fine; then Adam's first step creates its state (two fp32 moments per weight, 80% more) and
the peak does not fit. Nothing leaks and nothing is fragmented: the step is too big for the GPU.

Expected: memory.peak_near_capacity in the optimizer's first step, `opt.step()`'s line (`# planted`) on top.
Fix: a sharded or 8-bit optimizer state, bf16 weights, a smaller model per GPU.
"""

import torch
from torch import nn

D = 8192


def main() -> None:
    _, total = torch.cuda.mem_get_info()
    layers = max(2, int(0.4 * total) // (4 * D * D))
    model = nn.Sequential(*[nn.Linear(D, D, bias=False, device="cuda") for _ in range(layers)])
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(256, D, device="cuda")
    for _ in range(5):  # gradient accumulation: forward and backward, fine
        model(x).square().mean().backward()
        torch.cuda.synchronize()
    opt.step()  # planted: Adam's state created at its first step
    print(layers)


if __name__ == "__main__":
    main()

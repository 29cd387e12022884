"""Growth: each step's output is kept in a list (what `losses.append(loss)` without `.item()`, or outputs kept for
an epoch's metrics, do), 128 MiB a step, until the GPU is full. Each step also computes and frees its temporaries,
so the live memory between steps rises step after step.

Expected: memory.growing, the kept tensor's line (`# planted`) among the lines that grew.
Fix: keep numbers (`.item()`) or `.detach().cpu()`, not the GPU tensors.
"""

import torch

N = 8192


def main() -> None:
    w = torch.randn(N, N, device="cuda", dtype=torch.bfloat16) / N**0.5
    x = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    kept = []
    while True:
        h = torch.relu(x @ w)  # planted: each step's output, 128 MiB, kept below
        y = h
        for _ in range(6):  # the rest of the step: temporaries, freed
            y = torch.tanh(y @ w)
        kept.append(h)


if __name__ == "__main__":
    main()

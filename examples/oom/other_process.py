"""Another process holds memory on this GPU: with hold_memory.py holding 45% of it (another job, a notebook's
kernel, a stale process), a forward pass that keeps 1 GiB of activations per layer for backward needs more than
what is left — though the GPU alone would hold it.

Expected: memory.other_process, naming the other process's pid and its memory; the activations' line
(`# planted`) among the top lines.
Fix: free the GPU for this job, or bound each job's share (MIG, set_per_process_memory_fraction).

    python examples/oom/hold_memory.py 0.45 & gputriage run -- python examples/oom/other_process.py
"""

import time

import torch

GIB = 1 << 30


def main() -> None:
    free, total = torch.cuda.mem_get_info()
    if free > 0.8 * total:
        print("nothing else holds this GPU: start examples/oom/hold_memory.py first", flush=True)
    weights = torch.empty(int(0.15 * total), dtype=torch.uint8, device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    activations = []
    for _ in range(int(0.7 * total) // GIB):  # the forward pass would need 70% of the GPU in all
        activations.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))  # planted
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.05:  # the layer's compute
            (a @ a).sum().item()
    print(weights.numel(), len(activations))


if __name__ == "__main__":
    main()

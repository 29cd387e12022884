"""Data-parallel training where the gradients' all-reduce dominates: 8 layers of 8192x8192 (1 GiB of bf16
gradients) and 16 rows per GPU (on CPU cores, 4 layers of 1024x1024 and 4 rows), so each backward pass is far
shorter than the all-reduce it cannot hide behind. Every rank alike: no straggler, the job communication-bound.

Fix: more computation per all-reduce (larger batches, gradient accumulation with DDP.no_sync), or gradients
compressed (bf16 communication hooks).

    torchrun --nproc_per_node 2 comm_bound.py [--backend gloo]
"""

from _ddp import Plant, main

SIZES = {"cuda": (8192, 8, 16), "cpu": (1024, 4, 4)}

if __name__ == "__main__":
    main(__doc__, Plant(), SIZES)

"""Data-parallel training in bf16 whose rank 1 reads each batch 50 ms slower than the others (its Dataset sleeps):
the other ranks wait for it in the gradients' all-reduce at every step. `gputriage run` names rank 1 the straggler,
its loader's line the cause, and the others' collective wait the effect.

Fix: give the slow rank's loader what the others have (DataLoader workers, prefetching, the same storage).

    torchrun --nproc_per_node 2 slow_loader.py [--backend gloo] [--plant-s 0.05] [--fixed]
"""

from _ddp import Plant, main

if __name__ == "__main__":
    main(__doc__, Plant("loader", 0.05))

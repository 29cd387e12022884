"""Data-parallel training in bf16 whose rank 1 computes in Python for 50 ms after each step (a metric, a
tokenizer run on the training thread): the other ranks wait for it in the next all-reduce. `gputriage run` names
rank 1 the straggler and host computation on its main thread the cause.

Fix: move the work off the training thread (a DataLoader worker, a thread for I/O, or onto the GPU), or do it
on every rank alike.

    torchrun --nproc_per_node 2 host_compute.py [--backend gloo] [--plant-s 0.05] [--fixed]
"""

from _ddp import Plant, main

if __name__ == "__main__":
    main(__doc__, Plant("compute", 0.05))

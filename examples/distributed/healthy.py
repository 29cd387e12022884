"""Data-parallel training in bf16, every rank alike: large batches of an 8-layer MLP (dim 4096, 8,192 rows per GPU;
on CPU cores a small one), its gradients' all-reduce hidden behind the backward pass. No rank holds the others back:
`gputriage run` names no straggler.

    torchrun --nproc_per_node 2 healthy.py [--backend gloo] [--seconds 20]
"""

from _ddp import Plant, main

if __name__ == "__main__":
    main(__doc__, Plant())

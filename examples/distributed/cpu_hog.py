"""Data-parallel training on CPU cores, each rank pinned to a core of its own, and a busy process (a shell loop)
pinned to rank 1's core: rank 1 gets half its core and the others wait for it. `gputriage run` names rank 1 the
straggler and another process on its core the cause (its main thread waited for the CPU).

Fix: keep other work off the cores a rank is pinned to (or pin it elsewhere: taskset, numactl, the launcher's
binding), or leave the ranks unpinned.

    torchrun --nproc_per_node 2 cpu_hog.py --backend gloo [--fixed]
"""

from _ddp import Plant, main

if __name__ == "__main__":
    main(__doc__, Plant("hog"))

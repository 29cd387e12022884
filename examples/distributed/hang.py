"""Data-parallel training whose rank 1 stops before an all-reduce at step 20 (it sleeps 10 minutes, as a rank
stuck in a checkpoint, a dead filesystem or a deadlock would): every other rank waits in that all-reduce.
`gputriage run` (and `watch`, and the exporter) says so while the job is alive: the ranks that did not arrive and
where they are (file:line), once, after `--hang-after` seconds.

    torchrun --nproc_per_node 2 hang.py [--backend gloo] [--plant-s 600]
"""

from _ddp import Plant, main

if __name__ == "__main__":
    main(__doc__, Plant("hang", 600.0))

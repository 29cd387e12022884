"""Two processes of the same job compute on one GPU: the script starts a child (as a launcher that
gives every worker the same CUDA_VISIBLE_DEVICES would) that runs bf16 GEMMs beside the main loop.
The GPU time-slices between them, so the loop runs at about half its speed alone.

Fix: one computing process per GPU; here, the child stays on the CPU (CUDA_VISIBLE_DEVICES="").
"""

import atexit
import os
import subprocess
import sys
import time

import torch

N = 8192
# the job's second worker: bf16 GEMMs until its parent exits (at most 60 s)
WORKER = """
import os, sys, time, torch
parent = int(sys.argv[1])
cuda = torch.cuda.is_available()
a = torch.randn(8192 if cuda else 512, 8192 if cuda else 512, device="cuda" if cuda else "cpu",
                dtype=torch.bfloat16 if cuda else torch.float32)
t = time.time()
while time.time() - t < 60:
    for _ in range(20):
        a @ a
    if cuda:
        torch.cuda.synchronize()
    else:
        time.sleep(0.05)
    try:
        os.kill(parent, 0)
    except OSError:
        break
"""


def build(fixed: bool):
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="") if fixed else None
    child = subprocess.Popen([sys.executable, "-c", WORKER, str(os.getpid())], env=env)
    atexit.register(child.kill)
    time.sleep(6)  # let the worker start its loop

    def step() -> float:
        a @ a
        return 2 * N**3 / 1e12

    return step, "TFLOP"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

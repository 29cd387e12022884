"""A second process shares the GPU: both time-slice the SMs and each runs slower. The script starts
the neighbour itself (detached, as an unrelated job would be) and stops it at exit.

Fix: isolation (one job per GPU); here, the same work without the neighbour.
"""

import subprocess
import sys

import torch

N = 8192
# the neighbour: bf16 GEMMs for at most 60 s, and never longer than the script that started it lives
NEIGHBOUR = """
import os, sys, time, torch
parent = int(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 60:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
    try:
        os.kill(parent, 0)
    except OSError:
        break
"""


def build(fixed: bool):
    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    if not fixed:
        # start the neighbour as another job would be: detached (double fork), not our child
        import atexit
        import os
        import signal
        import time

        # the neighbour must not hold the launcher's stdout, or reading its pid waits for it to exit
        launcher = (
            "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], "
            "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL); print(p.pid)"
        )
        pid = int(subprocess.check_output([sys.executable, "-c", launcher, NEIGHBOUR, str(os.getpid())]).decode())

        atexit.register(lambda: os.kill(pid, signal.SIGKILL))
        time.sleep(6)  # let the neighbour start its loop

    def step() -> float:
        a @ a
        return 2 * N**3 / 1e12

    return step, "TFLOP"


if __name__ == "__main__":
    from _loop import main

    main(build, __doc__)

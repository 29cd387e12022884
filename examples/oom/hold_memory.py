"""Another job on the GPU: allocates SHARE of the GPU's memory, says "holding", and keeps it until killed (or
SECONDS have passed). Used with other_process.py.

    python examples/oom/hold_memory.py 0.45 [SECONDS]
"""

import sys
import time

import torch


def main() -> None:
    share = float(sys.argv[1]) if len(sys.argv) > 1 else 0.45
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
    _, total = torch.cuda.mem_get_info()
    held = torch.empty(int(share * total), dtype=torch.uint8, device="cuda")
    held.fill_(1)
    torch.cuda.synchronize()
    print("holding", held.numel(), flush=True)
    time.sleep(seconds)


if __name__ == "__main__":
    main()

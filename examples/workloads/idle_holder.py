"""A process that takes 20 GiB of GPU memory and then computes nothing (a notebook left open, a crashed job's
survivor): it holds the memory for `--seconds`. Run beside a computing job, it should be named as holding the
GPU idle, with the GPU-hours it represents."""

import argparse
import time

import torch


def main(seconds: float = 120.0, gib: float = 20.0) -> None:
    held = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, device="cuda")
    held.fill_(1)
    torch.cuda.synchronize()
    print(f"holding {gib:g} GiB on the GPU for {seconds:g} s", flush=True)
    time.sleep(seconds)
    del held


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--gib", type=float, default=20.0)
    args = parser.parse_args()
    main(args.seconds, args.gib)

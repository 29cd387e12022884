"""A CPU loop that reports each step through `gputriage.step()` and does five times the work per step half-way
(more arithmetic per step, no sleep): its step rate falls about 5x, whatever the machine's speed. It writes, for each
half, when it started and ended (unix s) and the steps it took, so a test can set the report against them."""

import argparse
import json
import time

import gputriage


def work(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def main(out: str, half_s: float, n: int) -> None:
    halves = []
    t0 = time.monotonic()
    for per_step, until_s in ((n, half_s), (5 * n, 2 * half_s)):
        start, steps = time.time(), 0
        while time.monotonic() - t0 < until_s:
            work(per_step)
            gputriage.step()
            steps += 1
        halves.append({"start_s": start, "end_s": time.time(), "steps": steps})
    with open(out, "w") as fh:
        json.dump(halves, fh)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--half-s", type=float, default=12.0)
    parser.add_argument("--n", type=int, default=2000)
    a = parser.parse_args()
    main(a.out, a.half_s, a.n)

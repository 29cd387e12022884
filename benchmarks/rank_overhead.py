"""What gputriage costs each rank of a distributed job under `run`: the stack sampler in the rank's process with its
rank bookkeeping on (`inworkload.rank_clock`: the main thread's schedstat read each round, its steps timed, where it
is now), against the same loop without any sampler, and against the sampler of a process that is no rank. Loops run
alternated in pairs (the order swapped every other pair), each pair's rate ratio; the median over pairs, and the
sampler thread's CPU. Without `gputriage.step()` in the loop, the rank clock times the main loop from its stack: the
costlier path. Also the per-rank bookkeeping in gputriage's own process (each rank's reading and its windows, once a
second), and with `--torchrun` a 2-rank gloo job (examples/distributed/healthy.py) with and without the hooks.

    python benchmarks/rank_overhead.py [--seconds 4] [--runs 5] [--torchrun]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("stack_sampler_overhead", HERE / "stack_sampler_overhead.py")
assert _spec is not None and _spec.loader is not None
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)
RANK_ENV = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "bench"}
LOOPS = {"small_ops": base.LOOPS["small_ops"], "lists": base.LOOPS["lists"]}


def rate(variant: str, loop: str, seconds: float, folder: str) -> tuple[float, float]:
    """The loop's rate and the sampler thread's CPU share: variant "none" (no sampler), "process", "rank"."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_ENV and k != base.stack_sampler.DIR_ENV}
    if variant != "none":
        env[base.stack_sampler.DIR_ENV] = folder
    if variant == "rank":
        env.update(RANK_ENV)
    out = subprocess.run(
        [sys.executable, "-c", base.CHILD, "0" if variant == "none" else "1", loop, str(seconds), str(base.SAMPLER)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    done, cpu = out.strip().splitlines()[-1].split()
    return float(done), float(cpu)


ROUND = r"""
import importlib.util, os, sys, threading, time
spec = importlib.util.spec_from_file_location("gputriage_stack_sampler", sys.argv[1])
ss = importlib.util.module_from_spec(spec); spec.loader.exec_module(ss)
def loop(stop):  # the main thread's stand-in: a training loop a few frames deep, always somewhere new
    def step(i):
        return sum(j * j for j in range(50)) + i
    i = 0
    while not stop.is_set():
        i = step(i) % 7
stop = threading.Event()
sampler = ss.StackSampler("/nonexistent")
if sampler.rank is not None:
    sampler.classifier.distributed = True  # a process group up: the kernel's counters read each round
    sampler.rank.split = ((ss._LAUNCH, ss._HOST), ss._COLLECTIVE)
sampler.gc.main_ident = threading.get_ident()  # this thread samples the worker below as its "main" thread
worker = threading.Thread(target=loop, args=(stop,), daemon=True)
worker.start()
sampler.gc.main_ident = worker.ident
if sampler.rank is not None:
    sampler.rank.main_ident = worker.ident
    sampler.rank.fd = os.open(f"/proc/self/task/{worker.native_id}/schedstat", os.O_RDONLY)
sampler._refresh_skipped()
for _ in range(200):
    sampler.sample()
n = 3000
t = time.thread_time()
for _ in range(n):
    sampler.sample()
    time.sleep(0.0005)
print((time.thread_time() - t) / n * 1e6)
stop.set()
"""


def round_us(rank: bool) -> float:
    """The CPU time of one sampling round (the main thread's stand-in always somewhere new), as a rank or not."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_ENV}
    if rank:
        env.update(RANK_ENV)
    out = subprocess.run([sys.executable, "-c", ROUND, str(base.SAMPLER)], env=env, capture_output=True, text=True)
    return float(out.stdout.split()[-1])


def rounds(runs: int) -> None:
    plain = statistics.median(round_us(False) for _ in range(runs))
    ranked = statistics.median(round_us(True) for _ in range(runs))
    hz = base.stack_sampler.RATE_HZ
    print(
        f"one sampling round: {plain:.1f} us in a process that is no rank, {ranked:.1f} us in a rank with a process "
        f"group (its main thread's schedstat read, its loop timed from its stack): at {hz:.0f} Hz, "
        f"{plain * hz / 1e4:.2f}% and {ranked * hz / 1e4:.2f}% of one core (median of {runs})\n",
        flush=True,
    )


def loops(seconds: float, runs: int) -> None:
    print(f"{'loop':<50} {'variant':<22} {'slowdown':>9} {'pairs (min..max)':>18} {'sampler CPU':>12}")
    with tempfile.TemporaryDirectory(prefix="gputriage-ranks-") as folder:
        for loop, what in LOOPS.items():
            for variant, name in (("process", "sampler, no rank"), ("rank", "sampler of a rank")):
                ratios, cpu = [], []
                for i in range(runs):
                    order = ("none", variant) if i % 2 == 0 else (variant, "none")
                    got = {v: rate(v, loop, seconds, folder) for v in order}
                    ratios.append(1.0 - got[variant][0] / got["none"][0])
                    cpu.append(got[variant][1])
                print(
                    f"{what:<50} {name:<22} {100 * statistics.median(ratios):>8.2f}% "
                    f"{100 * min(ratios):>8.2f}..{100 * max(ratios):.2f}% {100 * statistics.median(cpu):>11.2f}%",
                    flush=True,
                )


def bookkeeping(ranks: int = 8, readings: int = 300) -> None:
    """gputriage's own side: each rank's reading and its windows, per rank and second."""
    from gputriage.model.sample import Sample
    from gputriage.sampling.rank_reader import RankReader
    from gputriage.sampling.rank_windows import RankWindows

    reports = []
    for k in range(ranks):
        reports.append(
            {
                "pid": os.getpid(),
                "t_s": 0.0,
                "ticks": 0.0,
                "main": {"collective_wait": 0.0, "host_compute": 0.0},
                "all": {},
                "main_loader": 0.0,
                "main_cpu_s": 0.0,
                "wall_s": 0.0,
                "rank": {"rank": k, "source": "RANK", "world_size": ranks},
                "main_runq_s": 0.0,
                "steps": {"source": "gputriage.step", "total": 0.0, "hist": [0.0] * 84},
                "now": ["host_compute", 0.0, [["/u/train.py", 10, "main"]] * 12],
                "lines": [["/u/train.py", i, "f", "host_compute", 1.0, 1.0, 1] for i in range(50)],
            }
        )
    reader, windows = RankReader(), RankWindows(node="bench")
    t0 = time.thread_time()
    for i in range(readings):
        for r in reports:
            r["ticks"] += 50
            r["main"]["host_compute"] += 30
            r["main"]["collective_wait"] += 20
            r["wall_s"] += 1.0
            r["main_cpu_s"] += 0.3
            r["steps"]["total"] += 10
            r["steps"]["hist"][20] += 10
        windows.add(
            Sample(t_s=float(i), ranks=reader.read([dict(r, pid=os.getpid() + k) for k, r in enumerate(reports)]))
        )
    us = (time.thread_time() - t0) / readings / ranks * 1e6
    print(
        f"\ngputriage's side: {us:.0f} us of CPU per rank per reading (one a second): {us / 1e4:.3f}% of a core a rank"
    )


def torchrun(runs: int) -> None:
    """A 2-rank gloo job's steps/s with and without the hooks (`gputriage run` injects them)."""
    from gputriage.trace import inject

    script = HERE.parent / "examples" / "distributed" / "healthy.py"
    cmd = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node", "2", str(script)]
    cmd += ["--backend", "gloo", "--seconds", "8"]
    ratios = []
    for i in range(runs):
        got = {}
        for hooked in (False, True) if i % 2 == 0 else (True, False):
            env = dict(os.environ, OMP_NUM_THREADS="1")
            folder = tempfile.mkdtemp(prefix="gputriage-progress-")
            env[base.stack_sampler.DIR_ENV] = folder
            if hooked:
                env, hooks = inject.prepare_hooks(env)
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if "throughput:" not in r.stdout:  # gloo may abort a rank at exit, once its steps are counted: not then
                raise RuntimeError(f"the job failed (exit {r.returncode}): {r.stderr[-2000:]}")
            got[hooked] = float(r.stdout.split("throughput:")[1].split()[0])
        ratios.append(1.0 - got[True] / got[False])
    print(
        f"\n2-rank gloo job (healthy.py): slowdown {100 * statistics.median(ratios):.2f}% "
        f"(pairs {100 * min(ratios):.2f}..{100 * max(ratios):.2f}%, median of {runs})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--runs", type=int, default=5, help="pairs per loop")
    ap.add_argument("--torchrun", action="store_true", help="also a 2-rank gloo job with and without the hooks")
    args = ap.parse_args()
    rounds(args.runs)
    loops(args.seconds, args.runs)
    bookkeeping()
    if args.torchrun:
        torchrun(args.runs)
    print(
        "\nslowdown: the median over pairs of 1 - rate with / rate without; sampler CPU: its thread's CPU time as a "
        "share of the loop's wall time"
    )


if __name__ == "__main__":
    main()

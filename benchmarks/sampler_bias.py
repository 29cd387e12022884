"""Where the in-workload stack sampler sees a workload's main thread, against py-spy, which reads the stacks from
outside the process without its interpreter lock: the same program run twice, under `gputriage run --json` (the
sampler's lines) and under `py-spy record` (the innermost frame of the program's own files), and each line's share
of the main thread in both. A sample taken inside the workload needs the interpreter lock, so it lands where the
main thread gives the lock up (a wait, a torch call); py-spy's samples land anywhere.

    python benchmarks/sampler_bias.py [--seconds 8] [-- python3 PROGRAM.py ARGS]

Without a program, a CPU copy of `examples/workloads/python_tokenize.py`'s batch (a row tokenized in Python, then
handed to `torch.tensor`) runs, needing torch's CPU build. py-spy must be allowed to read the child (ptrace).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

TOKENIZE = r"""
import random, re, sys, time
import torch
BATCH, WORDS, SEQ, VOCAB = 64, 1500, 512, 30_000
SPLIT = re.compile(r"[\s,.;:!?()\"']+")
rnd = random.Random(0)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(VOCAB - 2)]
vocab = {w: i + 2 for i, w in enumerate(words)}
punct = [" ", " ", " ", ", ", ". ", "; "]
def document():
    return "".join(rnd.choice(words).capitalize() + rnd.choice(punct) for _ in range(WORDS))
def batch():
    ids = torch.zeros(BATCH, SEQ, dtype=torch.long)
    for row in range(BATCH):
        tokens = [vocab.get(w, 1) for w in SPLIT.split(document().lower()) if w][:SEQ]
        ids[row, : len(tokens)] = torch.tensor(tokens)
    return ids
end = time.time() + float(sys.argv[1])
while time.time() < end:
    batch()
"""


def sampler_lines(command: list[str]) -> tuple[dict[str, float], int]:
    """The sampler's main-thread share by `file:line` (the run's report), and its number of samples. Lines are
    compared without their function: Python 3.11's comprehensions are frames of their own, named apart."""
    out = subprocess.run(
        [sys.executable, "-m", "gputriage", "run", "--json", "--", *command], capture_output=True, text=True
    )
    if out.returncode != 0 or not out.stdout.strip():
        sys.exit(f"gputriage run failed: {out.stderr.strip()[-400:]}")
    report = json.loads(out.stdout)
    stacks = report.get("report", report).get("stacks") or {}
    shares: Counter[str] = Counter()
    for row in stacks.get("lines", []):
        shares[f"{Path(row['file']).name}:{row['line']}"] += row["share"]
    return dict(shares), int(stacks.get("samples") or 0)


def pyspy_lines(command: list[str], own: set[str]) -> tuple[dict[str, float], int]:
    """py-spy's share by `file:line` of the innermost frame in the program's own files (the main thread: py-spy's
    raw lines carry no thread, so every thread counts; the programs here have one)."""
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        sys.exit("py-spy is not installed (pip install py-spy)")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw.txt")
        record = [pyspy, "record", "-f", "raw", "-r", "100", "-o", raw, "--", *command]
        out = subprocess.run(record, capture_output=True)
        if out.returncode != 0 or not os.path.exists(raw):
            sys.exit(f"py-spy failed (is ptrace allowed?): {out.stderr.decode()[-400:]}")
        counts: Counter[str] = Counter()
        for line in Path(raw).read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            mine = [f for f in stack.split(";") if any(f"({name}:" in f for name in own)]
            if mine:  # `function (file.py:line)` -> `file.py:line`
                counts[mine[-1].rpartition(" (")[2].rstrip(")")] += int(n)
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else {}, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="how long the built-in program runs")
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- python3 PROGRAM.py ARGS (default: built-in)")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        if not command:
            program = Path(tmp) / "tokenize_cpu.py"
            program.write_text(TOKENIZE)
            command = [sys.executable, str(program), str(args.seconds)]
        own = {Path(c).name for c in command if c.endswith(".py")}
        ours, n_ours = sampler_lines(command)
        theirs, n_theirs = pyspy_lines(command, own)
    print(f"main thread's share by line: the in-workload sampler ({n_ours} samples) against py-spy ({n_theirs})")
    print(f"  {'line':32} {'sampler':>8} {'py-spy':>8}")
    keys = sorted(set(ours) | set(theirs), key=lambda k: -max(ours.get(k, 0.0), theirs.get(k, 0.0)))
    for key in keys[: args.top]:
        print(f"  {key[:32]:32} {ours.get(key, 0.0):8.1%} {theirs.get(key, 0.0):8.1%}")


if __name__ == "__main__":
    main()

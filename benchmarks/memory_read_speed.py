"""How long `gputriage memory` takes to read a large allocator snapshot: one of about 100 MB built to the format
`torch.cuda.memory._snapshot()` returns (as `_dump_snapshot()` pickles it: every event and block with its own list
of frames, the frame dicts shared, as torch symbolizes them), read end to end by the command (a child process:
start, safe unpickling, analysis, JSON), the median of `--runs`. Exits 1 over `--limit` seconds.

    python benchmarks/memory_read_speed.py [--mb 100] [--runs 3] [--limit 5] [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
ALIGN = 512


def _frames(rng: random.Random) -> list[list[dict]]:
    """400 distinct stacks over 300 distinct frames: torch's innermost, the workload's and a library's outside."""
    inner = [{"filename": f"{TORCH}/nn/modules/m{i}.py", "line": 100 + i, "name": "forward"} for i in range(60)]
    own = [{"filename": f"/home/user/project/model_{i % 12}.py", "line": 10 + i, "name": f"f{i}"} for i in range(200)]
    lib = [
        {"filename": f"/opt/conda/lib/python3.11/site-packages/lib/l{i}.py", "line": i, "name": "g"} for i in range(40)
    ]
    stacks = []
    for _ in range(400):
        depth = rng.randrange(20, 40)
        stack = rng.sample(inner, 3) + rng.sample(lib, 2) * rng.randrange(0, 2) + rng.sample(own, depth - 5)
        stacks.append(stack)
    return stacks


def build(target_mb: float, seed: int = 0) -> dict:
    """A snapshot of about `target_mb` MB pickled: segments of split blocks, and a history of alloc/free events."""
    rng = random.Random(seed)
    stacks = _frames(rng)
    per_entry = 140  # bytes pickled per event or block, about (measured on this builder)
    n = int(target_mb * 1e6 / per_entry)
    blocks_n, events_n = n // 4, n - n // 4
    segments, address = [], 0x7F0000000000
    while blocks_n > 0:
        k = min(blocks_n, rng.randrange(20, 80))
        blocks_n -= k
        blocks, offset = [], address
        for _ in range(k):
            size = rng.randrange(1, 4096) * ALIGN * 8
            live = rng.random() < 0.7
            blocks.append(
                {
                    "address": offset,
                    "size": size,
                    "requested_size": size - rng.randrange(0, ALIGN) if live else 0,
                    "state": "active_allocated" if live else "inactive",
                    "frames": list(rng.choice(stacks)) if live else [],
                }
            )
            offset += size
        total = offset - address
        segments.append(
            {
                "device": 0,
                "address": address,
                "total_size": total,
                "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
                "active_size": 0,
                "requested_size": 0,
                "stream": 0,
                "segment_type": "large",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": [],
                "blocks": blocks,
            }
        )
        address += total + (1 << 30)
    trace, live, t = [], [], 1_700_000_000_000_000
    for _ in range(events_n):
        t += rng.randrange(1, 200)
        if live and rng.random() < 0.48:
            addr, size = live.pop(rng.randrange(len(live)))
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": []})
        else:
            size = rng.randrange(1, 4096) * ALIGN * 8
            address += size
            live.append((address, size))
            trace.append(
                {
                    "action": "alloc",
                    "addr": address,
                    "size": size,
                    "stream": 0,
                    "time_us": t,
                    "frames": list(rng.choice(stacks)),
                }
            )
    return {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--keep", type=Path, help="write the snapshot there (else a temporary file)")
    args = ap.parse_args()
    t = time.perf_counter()
    data = pickle.dumps(build(args.mb), protocol=4)
    built_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp, "snapshot.pickle")
        path.write_bytes(data)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        took, cpu = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "gputriage", "memory", "--json", str(path)],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            took.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if done.returncode != 0:
                print(f"gputriage memory failed (exit {done.returncode}): {done.stderr[-500:]}", file=sys.stderr)
                return 2
    median = statistics.median(took)
    print(
        f"snapshot {len(data) / 1e6:,.1f} MB (built in {built_s:.1f} s); `gputriage memory --json` end to end: "
        f"median {median:.2f} s of {args.runs} ({min(took):.2f}-{max(took):.2f}), its CPU time median "
        f"{statistics.median(cpu):.2f} s; limit {args.limit:g} s; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs"
    )
    return 0 if median <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())

"""Run workloads under `gputriage run` in several modes on a GPU machine and keep what it said: each run's JSON
report, the run store, and a table (workload, mode, expected cause, verdict, top Python lines, finding ids).

    python benchmarks/live_batch.py --out DIR [--seconds 10] [--modes default,no-profile,no-gpm]
                                    [--workloads name,pathologies/name] [--budget-s 540] [--cold-compile]

A name is a script of examples/workloads, or a path under examples/ (`pathologies/gpt_loop`), with the script's own
arguments after colons (`pathologies/gpt_loop:--fixed`). The expected cause is read from each workload's docstring
(the words before its last full stop naming a bottleneck); the verdict code never sees the workload's name. Stops
starting runs when the time budget is spent, so a batch ends inside the device's limit with what it measured kept.
`--cold-compile` gives each run empty inductor and Triton caches, so torch.compile compiles from scratch every time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT / "examples" / "workloads"
MODES = {"default": [], "no-profile": ["--no-profile"], "no-gpm": ["--no-gpm"]}
CAUSES = (
    "input_starved",
    "launch_bound",
    "sync_bound",
    "h2d_copy_bound",
    "memory_bound",
    "compute_bound",
    "tensor_cores_idle",
    "underfilled",
    "throttled",
    "vram_pressure",
    "contended",
    "comm_bound",
    "idle",
    "host_bound",
)


def expected(script: Path) -> str:
    """The cause the docstring names last (a whole word: "idles" does not name idle)."""
    doc = script.read_text().split('"""')[1]
    found = [(m.start(), c) for c in CAUSES for m in re.finditer(rf"(?<![\w-]){c}(?![\w-])", doc)]
    return max(found)[1] if found else "?"


def run_one(
    script: Path,
    mode: str,
    seconds: float,
    out: Path,
    store: Path,
    limit_s: float,
    extra: tuple[str, ...] = (),
    cold_compile: bool = False,
) -> dict:
    name = script.stem + "".join(extra)
    report = out / f".{name}.{mode}.json"  # appended to reports.jsonl, then removed
    argv = [
        sys.executable,
        "-m",
        "gputriage",
        "run",
        "--store",
        str(store),
        "-o",
        str(report),
        "--quiet",
        *MODES[mode],
        "--",
        sys.executable,
        str(script),
        "--seconds",
        str(seconds),
        *extra,
    ]
    t0 = time.monotonic()
    env = dict(os.environ)
    # a workload timed out may still write there while it goes: what cannot be removed is left
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) if cold_compile else contextlib.nullcontext() as cache:
        if cache is not None:
            env |= {"TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor", "TRITON_CACHE_DIR": f"{cache}/triton"}
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit_s, env=env)
            code, tail = proc.returncode, (proc.stdout + proc.stderr)[-600:]
        except subprocess.TimeoutExpired:
            code, tail = None, "timed out"
    row = {
        "workload": name,
        "mode": mode,
        "expected": expected(script),
        "rc": code,
        "wall_s": round(time.monotonic() - t0, 1),
        "cold_compile": cold_compile,
        "output_tail": tail,  # the workload's own last words, whatever the verdict
    }
    try:
        r = json.loads(report.read_text())
    except (OSError, ValueError):
        row["error"] = tail
        return row
    with open(out / "reports.jsonl", "a") as f:
        f.write(json.dumps({"workload": name, "mode": mode, "report": r}) + "\n")
    report.unlink()
    v = r.get("verdict") or {}
    row["verdict"] = v.get("bottleneck")
    row["source"] = v.get("source")
    g = next(iter((v.get("per_gpu") or {}).values()), {})
    row["summary"] = g.get("summary", "")
    row["findings"] = [f["id"] for f in r.get("findings", [])]
    lines = g.get("lines") or (r.get("stacks") or {}).get("lines") or []
    row["host_lines"] = [
        f"{Path(x['file']).name}:{x['line']} {x['function']} {x['category']} {x['share']:.0%}" for x in lines[:4]
    ]
    row["main_shares"] = (r.get("stacks") or {}).get("main_shares")
    row["throughput"] = (r.get("throughput") or {}).get("samples_per_s")
    row["compile"] = r.get("compile")
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--modes", default="default,no-profile,no-gpm")
    p.add_argument("--workloads", default="")
    p.add_argument("--budget-s", type=float, default=540.0)
    p.add_argument("--cold-compile", action="store_true", help="empty inductor and Triton caches for each run")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    names = [n for n in a.workloads.split(",") if n]
    scripts = [
        ((WORKLOADS.parent if "/" in n else WORKLOADS) / f"{n.split(':')[0]}.py", tuple(n.split(":")[1:]))
        for n in names
    ]
    start, rows = time.monotonic(), []
    for script, extra in scripts:
        for mode in a.modes.split(","):
            left = a.budget_s - (time.monotonic() - start)
            if left < a.seconds + 20:
                rows.append({"workload": script.stem, "mode": mode, "skipped": "time budget spent"})
                continue
            limit = min(left, a.seconds * 6 + 60)
            row = run_one(script, mode, a.seconds, a.out, a.out / "runs.sqlite", limit, extra, a.cold_compile)
            rows.append(row)
            ok = "RIGHT" if row.get("verdict") == row["expected"] else "wrong"
            print(
                f"{row['workload']:24} {mode:10} expected {row['expected']:15} got {row.get('verdict')!s:15} "
                f"{ok}  {row['wall_s']}s  {row.get('findings', [])}  {row.get('host_lines', '')}",
                flush=True,
            )
            (a.out / "table.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

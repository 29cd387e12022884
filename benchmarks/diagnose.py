"""Run every pathology of examples/pathologies/ and its fixed version under `gputriage run`, with
and without `--profile`, and print: expected bottleneck, the sampler's verdict, the trace's
(merged) verdict, throughput before and after the fix, and whether each verdict is right.

    python benchmarks/diagnose.py [--seconds 8] [--out results.json] [--only name,name]
                                  [--modes sampled,profiled,fixed,fixed_profiled] [--keep-traces DIR]
                                  [--store runs.sqlite]

Results are written to --out after every pathology (a cut-short run keeps what it measured);
`--table results.json` prints the table of an earlier run.

Needs a CUDA GPU. The verdict code never sees these names: each script is just a command.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "examples" / "pathologies"
EXPECTED = {
    "input_starved": "input_starved",
    "pageable_copy": "h2d_copy_bound",
    "launch_bound": "launch_bound",
    "item_sync": "sync_bound",
    "fp32_no_tensor_cores": "tensor_cores_idle",
    "unfused_elementwise": "memory_bound",
    "small_batch": "underfilled",
    "vram_churn": "vram_pressure",
    "contended": "contended",
    "healthy": "compute_bound",
    "job_shares_gpu": "contended",
    "host_stats": "host_bound",
    "cpu_optimizer": "host_bound",
    "gpt_loop": "compute_bound",
    "ddp_allreduce": "comm_bound",
}
# scripts started by a launcher (one process per GPU), and how many GPUs they need
LAUNCHED = {"ddp_allreduce": 2}


RUNNING: list[int] = []  # the process group of the run in flight


def _stop_running(signum: int, frame: object) -> None:
    for pgid in RUNNING:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    sys.exit(128 + signum)


def gputriage_run(
    script: Path,
    fixed: bool,
    profile: bool,
    seconds: float,
    store: Path,
    keep: Path | None = None,
    no_gpm: bool = False,
) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        report_path = Path(tmp.name)
    argv = [sys.executable, "-m", "gputriage", "run", "--store", str(store), "-o", str(report_path), "--quiet"]
    if no_gpm:
        argv.append("--no-gpm")
    if profile:
        argv += ["--profile"] + (["--keep-trace", str(keep / f"{script.stem}.json")] if keep else [])
    launcher = (
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={LAUNCHED[script.stem]}",
            "--master_port=29533",
        ]
        if script.stem in LAUNCHED
        else [sys.executable]
    )
    argv += ["--", *launcher, str(script), "--seconds", str(seconds)] + (["--fixed"] if fixed else [])
    t0 = time.time()
    # a session of its own, so a timeout stops the workload and whatever it started, not just `gputriage run`
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=script.parent, start_new_session=True
    )
    RUNNING[:] = [proc.pid]
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"rc": None, "wall_s": round(time.time() - t0, 1), "error": "timed out after 120 s"}
    proc = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
    report = json.loads(report_path.read_text()) if report_path.stat().st_size else {}
    m = re.search(r"throughput: ([0-9.]+) (\S+)", proc.stdout)
    warnings = [f["id"] for f in report.get("findings", []) if f["severity"] in ("warn", "critical")]
    profiled = report.get("profile") or {}
    return {
        "rc": proc.returncode,
        "wall_s": round(time.time() - t0, 1),
        "throughput": float(m.group(1)) if m else None,
        "unit": m.group(2) if m else None,
        "verdict": report.get("verdict", {}).get("bottleneck"),
        "sampler": next(iter(report.get("verdict", {}).get("per_gpu", {}).values()), {}).get("bottleneck"),
        "undecided": next(iter(report.get("verdict", {}).get("per_gpu", {}).values()), {}).get("undecided_between"),
        "trace": ((profiled.get("trace") or {}).get("verdict") or {}).get("bottleneck"),
        "trace_error": profiled.get("error"),
        "warnings": warnings,
        "stderr_tail": proc.stderr[-400:] if proc.returncode else "",
        # the evidence, to check a verdict afterwards (the profile's kernel tables left out)
        "report": {
            "verdict": report.get("verdict"),
            "findings": report.get("findings"),
            "host": report.get("host"),
            "processes": report.get("processes"),
            "id": report.get("id"),
            "profile": {k: v for k, v in profiled.items() if k != "trace"},
            "trace_verdict": (profiled.get("trace") or {}).get("verdict"),
            "trace_ranks": [
                {
                    "rank": r.get("rank"),
                    "verdict": r.get("verdict"),
                    "overlap": r.get("overlap"),
                    "problems": r.get("problems"),
                }
                for r in (profiled.get("trace") or {}).get("ranks", [])
            ],
            "trace_findings": [f.get("id") for f in (profiled.get("trace") or {}).get("findings", [])],
        },
    }


MODES = ("sampled", "profiled", "fixed", "fixed_profiled")


def verdict_ok(got: str | None, expected: str, undecided: list[str] | None = None) -> str:
    if got == expected:
        return "yes"
    return "set" if expected in (undecided or []) else "NO"


def print_table(rows: list[dict]) -> None:
    print("ok: yes = named; set = among the causes the sampler says it cannot separate (--profile does)")
    head = (
        f"{'pathology':21} {'expected':16} {'sampler':16} {'ok':3} {'--profile':16} {'ok':3} "
        f"{'before':>10} {'after':>10} {'gain':>6}  fixed: warnings (sampled / profiled)"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        s, p, f, fp = (r.get(m) or {} for m in MODES)
        gain = (f["throughput"] / s["throughput"]) if f.get("throughput") and s.get("throughput") else None
        warn = " / ".join(",".join(x.get("warnings") or []) or "-" for x in (f, fp) if x)
        print(
            f"{r['pathology']:21} {r['expected']:16} {s.get('sampler')!s:16} "
            f"{verdict_ok(s.get('sampler'), r['expected'], s.get('undecided')) if s else '':3} "
            f"{p.get('verdict')!s:16} {verdict_ok(p.get('verdict'), r['expected']) if p else '':3} "
            f"{s.get('throughput') or 0:10.1f} {f.get('throughput') or 0:10.1f} "
            f"{f'{gain:.2f}x' if gain else '':>6}  {warn}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--seconds",
        type=float,
        default=8.0,
        help="steady loop length (the scripts' own default: a loop much shorter than a script's warm-up, "
        "such as DataLoader workers starting, is judged mostly on its warm-up)",
    )
    ap.add_argument(
        "--profile-seconds",
        type=float,
        default=20.0,
        help="loop length under --profile: on a GPU the profiler's start waits seconds for the queue",
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--keep-traces", type=Path, default=None, help="keep each --profile trace in this folder")
    ap.add_argument("--table", type=Path, default=None, help="print the table of an earlier --out file")
    ap.add_argument("--store", type=Path, default=None, help="keep the runs (samples included) in this SQLite store")
    ap.add_argument("--no-gpm", action="store_true", help="sample without GPM, as a GPU before Hopper is sampled")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop_running)
    if args.table:
        print_table(json.loads(args.table.read_text()))
        return
    modes = [m for m in args.modes.split(",") if m in MODES]
    names = [n for n in EXPECTED if (not args.only or n in args.only.split(",")) and n not in LAUNCHED] + [
        n for n in LAUNCHED if n in args.only.split(",")
    ]  # multi-GPU cases only when asked
    store = args.store or Path(tempfile.mkdtemp()) / "runs.sqlite"
    if args.keep_traces:
        args.keep_traces.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        script = GALLERY / f"{name}.py"
        row = {"pathology": name, "expected": EXPECTED[name]}
        for mode in modes:
            fixed, profile = mode.startswith("fixed"), mode.endswith("profiled")
            if fixed and name == "healthy":
                continue
            # torch.compile's warm-up takes seconds: give the fused loop time to dominate the run
            secs = args.seconds * 2 if fixed and name == "unfused_elementwise" else args.seconds
            if profile:
                secs = max(secs, args.profile_seconds)
            keep = (args.keep_traces / ("fixed" if fixed else "broken")) if args.keep_traces and profile else None
            if keep:
                keep.mkdir(exist_ok=True)
            row[mode] = gputriage_run(script, fixed, profile, secs, store, keep, no_gpm=args.no_gpm)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
    print()
    print_table(rows)


if __name__ == "__main__":
    main()

"""Run every pathology of examples/pathologies/ and its fixed version under `gputriage run`, with
and without `--profile`, and print: expected bottleneck, the sampler's verdict, the trace's
(merged) verdict, throughput before and after the fix, and whether each verdict is right.

    python benchmarks/diagnose.py [--seconds 6] [--out results.json] [--only name,name]

Needs a CUDA GPU. The verdict code never sees these names: each script is just a command.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "examples" / "pathologies"
EXPECTED = {
    "input_starved": "input_starved", "pageable_copy": "h2d_copy_bound", "launch_bound": "launch_bound",
    "item_sync": "sync_bound", "fp32_no_tensor_cores": "tensor_cores_idle", "unfused_elementwise": "memory_bound",
    "small_batch": "underfilled", "vram_churn": "vram_pressure", "contended": "contended", "healthy": "compute_bound",
}


def gputriage_run(script: Path, fixed: bool, profile: bool, seconds: float, store: Path,
                  keep: Path | None = None) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        report_path = Path(tmp.name)
    argv = [sys.executable, "-m", "gputriage", "run", "--store", str(store), "-o", str(report_path), "--quiet"]
    if profile:
        argv += ["--profile"] + (["--keep-trace", str(keep / f"{script.stem}.json")] if keep else [])
    argv += ["--", sys.executable, str(script), "--seconds", str(seconds)] + (["--fixed"] if fixed else [])
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=script.parent, timeout=300)
    report = json.loads(report_path.read_text()) if report_path.stat().st_size else {}
    m = re.search(r"throughput: ([0-9.]+) (\S+)", proc.stdout)
    warnings = [f["id"] for f in report.get("findings", []) if f["severity"] in ("warn", "critical")]
    return {"rc": proc.returncode, "wall_s": round(time.time() - t0, 1),
            "throughput": float(m.group(1)) if m else None, "unit": m.group(2) if m else None,
            "verdict": report.get("verdict", {}).get("bottleneck"),
            "sampler": next(iter(report.get("verdict", {}).get("per_gpu", {}).values()), {}).get("bottleneck"),
            "undecided": next(iter(report.get("verdict", {}).get("per_gpu", {}).values()), {}).get("undecided_between"),
            "trace": (report.get("trace") or {}).get("verdict", {}).get("bottleneck") if report.get("trace") else None,
            "trace_error": (report.get("trace") or {}).get("error"), "warnings": warnings,
            "stderr_tail": proc.stderr[-400:] if proc.returncode else ""}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep-traces", type=Path, default=None, help="keep each --profile trace in this folder")
    args = ap.parse_args()
    names = [n for n in EXPECTED if not args.only or n in args.only.split(",")]
    store = Path(tempfile.mkdtemp()) / "runs.sqlite"
    rows = []
    for name in names:
        script = GALLERY / f"{name}.py"
        row = {"pathology": name, "expected": EXPECTED[name]}
        row["sampled"] = gputriage_run(script, False, False, args.seconds, store)
        if args.keep_traces:
            args.keep_traces.mkdir(parents=True, exist_ok=True)
        row["profiled"] = gputriage_run(script, False, True, args.seconds, store, args.keep_traces)
        if name != "healthy":
            # torch.compile's warm-up takes seconds: give the fused loop time to dominate the run
            secs = args.seconds * 4 if name == "unfused_elementwise" else args.seconds
            row["fixed"] = gputriage_run(script, True, False, secs, store)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    print()
    print("ok: yes = named; set = among the causes the sampler says it cannot separate (--profile does)")
    head = f"{'pathology':22} {'expected':18} {'sampler':18} {'ok':3} {'--profile':18} {'ok':3} {'before':>10} {'after':>10} {'gain':>6}  fixed: warnings"
    print(head)
    print("-" * len(head))
    for r in rows:
        s, p, f = r["sampled"], r["profiled"], r.get("fixed", {})
        gain = (f["throughput"] / s["throughput"]) if f.get("throughput") and s.get("throughput") else None
        s_ok = "yes" if s["sampler"] == r["expected"] else ("set" if r["expected"] in (s.get("undecided") or []) else "NO")
        print(f"{r['pathology']:22} {r['expected']:18} {str(s['sampler']):18} {s_ok:3} "
              f"{str(p['verdict']):18} {'yes' if p['verdict'] == r['expected'] else 'NO':3} "
              f"{s['throughput'] or 0:10.1f} {f.get('throughput') or 0:10.1f} {f'{gain:.2f}x' if gain else '':>6}  "
              f"{','.join(f.get('warnings', [])) or ('-' if f else '')}")


if __name__ == "__main__":
    main()

"""gputriage trace vs HolisticTraceAnalysis 0.5 on the same files, in one run, each in a fresh
process: wall time and peak memory (median of N runs each; ours: peak RSS plus, for a large file read
on several cores, the other readers' PSS), and each tool's answer.

    python benchmarks/trace_vs_hta.py TRACE.json [TRACE.json ...] [--runs 3] [--hta-python PATH]

HTA reads a folder of per-rank traces; each file is given to it as a folder holding a copy with
`distributedInfo.rank = 0` (HTA needs it). gputriage reads the original file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PEAK = """
import resource
def peak_mb():  # this process's own high-water mark (ru_maxrss keeps a forking parent's across exec)
    try:
        return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
OURS = PEAK + """
import json, sys, time
t = time.perf_counter()
from gputriage.api import analyze_trace
r = analyze_trace([sys.argv[1]])
wall = time.perf_counter() - t
b = r.verdict.bottleneck
helpers = sum(x.readers_memory_bytes for x in r.ranks) / 2**20  # a large file's other readers (PSS)
print(json.dumps({"wall_s": wall, "rss_mb": peak_mb() + helpers,
                  "answer": b.value if b else None, "idle_pct": r.verdict.gpu_idle_pct,
                  "readers": max(x.readers for x in r.ranks)}))
"""
HTA = PEAK + """
import json, sys, time, logging
logging.disable(logging.WARNING)
t = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
tb = a.get_temporal_breakdown(visualize=False)
idle = a.get_idle_time_breakdown(visualize=False)
wall = time.perf_counter() - t
row = tb.iloc[0].to_dict()
cat = idle[0] if isinstance(idle, tuple) else idle
top = cat.sort_values("idle_time", ascending=False).iloc[0]["idle_category"] if len(cat) else None
print(json.dumps({"wall_s": wall, "rss_mb": peak_mb(),
                  "answer": f"idle {row.get('idle_time_pctg')}%, top idle category {top}"}, default=str))
"""


def run(python: str, code: str, arg: str, env: dict[str, str] | None = None) -> dict:
    p = subprocess.run([python, "-c", code, arg], capture_output=True, text=True, timeout=1800,
                       env={**os.environ, **(env or {})})
    if p.returncode:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def hta_copy(trace: Path) -> Path:
    """A folder holding the trace with `distributedInfo` (HTA needs it), copied in pieces: this process
    stays small (its children would otherwise report its peak as theirs)."""
    folder = Path(tempfile.mkdtemp(prefix="hta-"))
    with open(trace, "rb") as src, open(folder / "rank0.json", "wb") as dst:
        head = src.read(1 << 16)
        if b'"distributedInfo"' not in head:
            head = head.replace(b"{", b'{\n  "distributedInfo": {"rank": 0, "world_size": 1},', 1)
        dst.write(head)
        shutil.copyfileobj(src, dst, 1 << 20)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hta-python", default=sys.executable)
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--hta-runs", type=int, default=None, help="runs of HTA (default: --runs; it takes minutes on "
                                                              "large traces)")
    ap.add_argument("--serial", action="store_true", help="also time gputriage reading with one process")
    args = ap.parse_args()
    rows = []
    for trace in args.traces:
        ours = [run(sys.executable, OURS, str(trace)) for _ in range(args.runs)]
        serial = [run(sys.executable, OURS, str(trace), {"GPUTRIAGE_TRACE_READERS": "1"})
                  for _ in range(args.runs)] if args.serial else []
        hta = []
        if not args.skip_hta:
            folder = hta_copy(trace)
            hta = [run(args.hta_python, HTA, str(folder)) for _ in range(args.hta_runs or args.runs)]
            shutil.rmtree(folder, ignore_errors=True)
        rows.append((trace, ours, hta, serial))
    print(f"{'trace':34} {'MB':>6} {'ours s':>8} {'HTA s':>8} {'speed-up':>9} {'ours MB':>8} {'HTA MB':>8} "
          f"{'RSS ratio':>9}")
    for trace, ours, hta, serial in rows:
        ow = statistics.median(r["wall_s"] for r in ours if "wall_s" in r)
        om = statistics.median(r["rss_mb"] for r in ours if "rss_mb" in r)
        ok = [r for r in hta if "wall_s" in r]
        hw = statistics.median(r["wall_s"] for r in ok) if ok else float("nan")
        hm = statistics.median(r["rss_mb"] for r in ok) if ok else float("nan")
        print(f"{trace.name[:34]:34} {trace.stat().st_size / 1e6:6.0f} {ow:8.2f} {hw:8.2f} {hw / ow:8.1f}x "
              f"{om:8.0f} {hm:8.0f} {om / hm:9.2f}")
        print(f"    gputriage: {ours[0].get('answer')} (GPU idle {ours[0].get('idle_pct')}%), read by "
              f"{ours[0].get('readers')} process(es)")
        if serial:
            sw = statistics.median(r["wall_s"] for r in serial if "wall_s" in r)
            sm = statistics.median(r["rss_mb"] for r in serial if "rss_mb" in r)
            print(f"    gputriage read by one process: {sw:.2f} s ({hw / sw:.1f}x HTA), {sm:.0f} MB ({sm / hm:.2f})")
        print(f"    HTA:       {(hta[0] if hta else {}).get('answer') or (hta[0] if hta else {}).get('error')}")


if __name__ == "__main__":
    main()

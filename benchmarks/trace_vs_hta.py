"""gputriage trace vs HolisticTraceAnalysis 0.5 on the same files, each run in a fresh process: CPU time
(the process and every process it started, from the parent's rusage: start-up and imports included), MB
per second per core, wall time, peak memory (ours: peak RSS plus, for a file read on several cores, the
other readers' PSS) and each tool's answer. gputriage is run with one reader (the CPU time that matters
on a shared machine) and with the readers it would use by itself (`--readers`); where HTA is not
installed, a plain reader (`json.load` and a Python loop over the events: the floor of any analysis in
Python that decodes the whole file) stands in for it, and the table says so.

    python benchmarks/trace_vs_hta.py TRACE.json [TRACE.json ...] [--runs 5] [--readers 8]
        [--hta-python PATH] [--hta-runs 1] [--skip-hta] [--plain] [--from-source] [--before OTHER/src]

Medians of `--runs`. Each tool starts from compiled bytecode, as an installed package does: HTA and the
libraries from their installed caches, gputriage (often a checkout, where PYTHONDONTWRITEBYTECODE would
have every start compile its modules again) from a cache of its own filled by one untimed run per trace
(`--from-source`: without it, every module compiled at each start). HTA reads a folder of per-rank traces;
each file is given to it as a folder holding a copy with `distributedInfo.rank = 0` (HTA needs it).
gputriage reads the original file.
`benchmarks/make_big_trace.py SRC OUT --mb 80` builds a large trace in Kineto's own layout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEAK = """
import resource
def peak_mb():  # this process's own high-water mark (ru_maxrss keeps a forking parent's across exec)
    try:
        return next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
OURS = (
    PEAK
    + """
import json, sys, time
t = time.perf_counter()
from gputriage.api import analyze_trace
import gputriage.api.trace, gputriage.trace.analyze  # noqa: E401 (imports apart from the read)
cpu = time.process_time()
r = analyze_trace([sys.argv[1]])
cpu = time.process_time() - cpu
wall = time.perf_counter() - t
b = r.verdict.bottleneck
helpers = sum(x.readers_memory_bytes for x in r.ranks) / 2**20  # a large file's other readers (PSS)
print(json.dumps({"wall_s": wall, "rss_mb": peak_mb() + helpers, "read_cpu_s": cpu,
                  "answer": b.value if b else None, "idle_pct": r.verdict.gpu_idle_pct,
                  "readers": max(x.readers for x in r.ranks)}))
"""
)
HTA = (
    PEAK
    + """
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
)
# the floor of a Python analysis that decodes the whole file: json.load, then one loop over the events that sorts
# them by kind and sums the GPU's busy time (no idle attribution, no kernel table)
PLAIN = (
    PEAK
    + """
import gzip, json, sys, time
t = time.perf_counter()
opener = gzip.open if open(sys.argv[1], "rb").read(2) == b"\\x1f\\x8b" else open
with opener(sys.argv[1], "rb") as fh:
    events = json.load(fh)["traceEvents"]
gpu, ops, calls = [], 0, 0
for e in events:
    if e.get("ph") != "X":
        continue
    cat = e.get("cat")
    if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
        gpu.append((e["ts"], e["ts"] + e.get("dur", 0)))
    elif cat == "cpu_op":
        ops += 1
    elif cat in ("cuda_runtime", "cuda_driver"):
        calls += 1
gpu.sort()
busy, end = 0.0, float("-inf")
for s, e in gpu:
    if e > end:
        busy += e - max(s, end)
        end = e
span = (gpu[-1][1] - gpu[0][0]) if gpu else 0.0
wall = time.perf_counter() - t
print(json.dumps({"wall_s": wall, "rss_mb": peak_mb(),
                  "answer": f"GPU busy {100 * busy / span if span else 0:.1f}% of {span / 1e3:.0f} ms; {ops} ops"}))
"""
)


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(python: str, code: str, arg: str, env: dict[str, str | None] | None = None) -> dict:
    """One fresh process: what it printed, its CPU time (with every process it started and waited for) and wall.
    An `env` value None takes that variable out of the process's environment."""
    cpu, t = children_cpu_s(), time.perf_counter()
    child = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    p = subprocess.run([python, "-c", code, arg], capture_output=True, text=True, timeout=3600, env=child)
    cpu, wall = children_cpu_s() - cpu, time.perf_counter() - t
    if p.returncode:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "cpu_s": cpu, "process_wall_s": wall}


def command(trace: Path, env: dict[str, str | None]) -> dict:
    """`gputriage trace FILE --json` as a user runs it (its output thrown away): CPU time and wall of the whole
    command, the command line's own start-up included, and its peak RSS (the kernel's high-water mark for the
    process, which starts from this small script's own at the fork)."""
    cpu, t = children_cpu_s(), time.perf_counter()
    child = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(
            [sys.executable, "-m", "gputriage", "trace", str(trace), "--json"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=child,
        )
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip()
    cpu, wall = children_cpu_s() - cpu, time.perf_counter() - t
    if p.returncode:  # with --fail-on never, 0 once the trace is read
        return {"error": stderr.splitlines()[-1] if stderr else f"exit {p.returncode}"}
    return {"cpu_s": cpu, "process_wall_s": wall, "rss_mb": usage.ru_maxrss / 1024, "answer": f"exit {p.returncode}"}


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


def hta_installed(python: str) -> bool:
    return subprocess.run([python, "-c", "import hta.trace_analysis"], capture_output=True).returncode == 0


def median(rows: list[dict], key: str) -> float:
    ok = [r[key] for r in rows if key in r]
    return statistics.median(ok) if ok else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--readers", type=int, default=8, help="readers for the several-core run (1: skip it)")
    ap.add_argument("--hta-python", default=sys.executable)
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument(
        "--hta-runs", type=int, default=None, help="runs of HTA (default: --runs; it takes minutes on large traces)"
    )
    ap.add_argument(
        "--from-source",
        action="store_true",
        help="gputriage's modules compiled at every start (no bytecode cache), as a checkout run with "
        "PYTHONDONTWRITEBYTECODE",
    )
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="also time, one reader, the gputriage in this folder (another checkout's src), each run beside one of "
        "this one's: a change's gain measured side by side",
    )
    ap.add_argument(
        "--plain",
        action="store_true",
        help="also time json.load and a Python loop over the events (run anyway where HTA is not installed)",
    )
    args = ap.parse_args()
    with_hta = not args.skip_hta and hta_installed(args.hta_python)
    if not args.skip_hta and not with_hta:
        print(
            f"HolisticTraceAnalysis is not installed for {args.hta_python}: not measured; json.load and a Python "
            "loop stand in for it"
        )
    pycache = tempfile.mkdtemp(prefix="gputriage-pyc-")
    compiled: dict[str, str | None] = (
        {} if args.from_source else {"PYTHONPYCACHEPREFIX": pycache, "PYTHONDONTWRITEBYTECODE": None}
    )
    print(
        "gputriage started "
        + ("from source (its modules compiled at every start)" if args.from_source else "from compiled bytecode")
    )
    before_pycache = tempfile.mkdtemp(prefix="gputriage-pyc-before-")
    before_env: dict[str, str | None] = {
        **compiled,
        **({"PYTHONPYCACHEPREFIX": before_pycache} if not args.from_source else {}),
        "PYTHONPATH": str(args.before),
        "GPUTRIAGE_TRACE_READERS": "1",
    }
    for trace in args.traces:
        mb = trace.stat().st_size / 1e6
        if not args.from_source:  # untimed: fills the bytecode cache of every module this trace's read imports
            run(sys.executable, OURS, str(trace), {**compiled, "GPUTRIAGE_TRACE_READERS": str(args.readers)})
            command(trace, {**compiled, "GPUTRIAGE_TRACE_READERS": "1"})
            if args.before:
                run(sys.executable, OURS, str(trace), before_env)
        one, before = [], []
        for _ in range(args.runs):
            one.append(run(sys.executable, OURS, str(trace), {**compiled, "GPUTRIAGE_TRACE_READERS": "1"}))
            if args.before:
                before.append(run(sys.executable, OURS, str(trace), before_env))
        cli = [command(trace, {**compiled, "GPUTRIAGE_TRACE_READERS": "1"}) for _ in range(args.runs)]
        several = (
            [
                run(sys.executable, OURS, str(trace), {**compiled, "GPUTRIAGE_TRACE_READERS": str(args.readers)})
                for _ in range(args.runs)
            ]
            if args.readers > 1
            else []
        )
        plain = [run(sys.executable, PLAIN, str(trace)) for _ in range(args.runs)] if args.plain or not with_hta else []
        hta = []
        if with_hta:
            folder = hta_copy(trace)
            hta = [run(args.hta_python, HTA, str(folder)) for _ in range(args.hta_runs or args.runs)]
            shutil.rmtree(folder, ignore_errors=True)
        print(f"\n{trace.name}: {mb:.1f} MB")
        print(f"  {'reader':34} {'CPU s':>7} {'MB/s/core':>10} {'wall s':>7} {'peak MB':>8}  answer")
        rows = [
            ("gputriage (before), one reader", before),
            ("gputriage, one reader", one),
            ("gputriage trace --json, 1 reader", cli),
            (f"gputriage, up to {args.readers} readers", several),
            ("HTA 0.5", hta),
            ("json.load + Python loop", plain),
        ]
        for label, res in rows:
            if not res:
                continue
            if all("error" in r for r in res):
                print(f"  {label:34} failed: {res[0]['error']}")
                continue
            cpu = median(res, "cpu_s")
            readers = (
                f" ({res[0]['readers']} used)" if "readers" in res[0] and label.startswith("gputriage, up") else ""
            )
            print(
                f"  {label + readers:34} {cpu:7.3f} {mb / cpu:10.0f} {median(res, 'process_wall_s'):7.3f} "
                f"{median(res, 'rss_mb'):8.0f}  {res[0].get('answer')}".replace("     nan", "       -")
            )
        read = median(one, "read_cpu_s")
        print(
            f"  gputriage's read and analysis alone (after start-up and imports, one reader): {read:.3f} s of CPU, "
            f"{mb / read:.0f} MB/s per core"
        )
        base = median(hta, "cpu_s") if hta else median(plain, "cpu_s")
        what = "HTA" if hta else "json.load + loop"
        ours = median(one, "cpu_s")
        base_wall = median(hta or plain, "process_wall_s")
        line = f"  CPU time, one reader: {what} {base:.3f} s / gputriage {ours:.3f} s = {base / ours:.1f}x"
        line += f"; wall time: {base_wall / median(one, 'process_wall_s'):.1f}x with one reader"
        if several:
            line += f", {base_wall / median(several, 'process_wall_s'):.1f}x with up to {args.readers} readers"
        print(line)
        if before:
            was = median(before, "cpu_s")
            print(
                f"  before: {what} {base:.3f} s / gputriage {was:.3f} s = {base / was:.1f}x; this one takes "
                f"{100 * (ours - was) / was:+.1f}% CPU time"
            )
        ours_cli = median(cli, "cpu_s")
        print(
            f"  the command, one reader: {what} {base:.3f} s / `gputriage trace` {ours_cli:.3f} s = "
            f"{base / ours_cli:.1f}x in CPU time, {base_wall / median(cli, 'process_wall_s'):.1f}x in wall time"
        )
        base_mb = median(hta or plain, "rss_mb")
        print(
            f"  peak memory, one reader: {what} {base_mb:.0f} MB / gputriage {median(one, 'rss_mb'):.0f} MB = "
            f"{base_mb / median(one, 'rss_mb'):.1f}x (the command: {median(cli, 'rss_mb'):.0f} MB, "
            f"{base_mb / median(cli, 'rss_mb'):.1f}x)"
        )
    shutil.rmtree(pycache, ignore_errors=True)
    shutil.rmtree(before_pycache, ignore_errors=True)


if __name__ == "__main__":
    main()

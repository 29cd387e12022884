"""Record the five planted out-of-memory errors (examples/oom) on this GPU under `gputriage run --json`, read each
snapshot the workload saved with `gputriage memory --json`, check each verdict (its cause, and the planted line
among the top three lines or the one that asked), and measure what the allocation stacks cost
(benchmarks/memory_history_cost.py) and how fast a 100 MB snapshot reads (benchmarks/memory_read_speed.py).

One device call, under 8 minutes; at most 8 files in OUT, each well under 16 MB: one tar.gz per case (the run's
JSON report and stderr, its samples cut from the store, the kept snapshot, its marker and the processes the sampler
read, the verdict), the cost table, the read speed, and summary.txt. A case is right when both `gputriage memory`
and the run's own report (`memory.cause` of `run --json`) name its cause.

    python benchmarks/record_oom.py --out "$OUT" [--cases too_large,growing] [--skip-cost] [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "oom"
CASES = {
    "too_large": "memory.request_too_large",
    "fragmented": "memory.fragmented",
    "growing": "memory.growing",
    "other_process": "memory.other_process",
    "peak": "memory.peak_near_capacity",
}
OTHER_SHARE = "0.45"  # what hold_memory.py holds for other_process.py
CASE_TIMEOUT_S = 180


def planted_line(case: str) -> int:
    """The line of the example whose comment says `# planted` (a comment of code: the docstring may quote it)."""
    path = EXAMPLES / f"{case}.py"
    with path.open("rb") as fh:
        for tok in tokenize.tokenize(fh.readline):
            if tok.type == tokenize.COMMENT and tok.string.lstrip("# ").startswith("planted"):
                return tok.start[0]
    raise ValueError(f"examples/oom/{case}.py has no line marked # planted")


def check(report: dict, case: str) -> tuple[bool, str]:
    """Whether a `gputriage memory --json` report names the case's cause with the planted line among its top three
    lines (or as the line that asked); and what it got."""
    want = f"{case}.py:{planted_line(case)}"
    state = report.get("state") or {}
    lines = [f"{Path(ln['file']).name}:{ln['line']}" for ln in (state.get("top_lines") or [])[:3]]
    asked = ((state.get("oom") or {}).get("line") or "").rsplit("/", 1)[-1]
    got = report.get("cause") or "none"
    where = "top three" if want in lines else "the line that asked" if want == asked else "missing"
    ok = got == CASES[case] and where != "missing"
    return ok, f"{got}; planted {want}: {where}; top {', '.join(lines) or '-'}; asked {asked or '-'}"


def _env(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["GPUTRIAGE_STORE"] = str(folder / "runs.sqlite")
    return env


def _hold(env: dict[str, str], folder: Path) -> subprocess.Popen[str]:
    """Another job holding a share of the GPU, once it says it holds it."""
    hold = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "hold_memory.py"), OTHER_SHARE, "600"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=(folder / "hold.stderr").open("w"),
        text=True,
    )
    assert hold.stdout is not None
    line = hold.stdout.readline()  # blocks until it holds (or dies)
    (folder / "hold.stdout").write_text(line)
    return hold


def record(case: str, work: Path) -> dict:
    folder = work / case
    folder.mkdir(parents=True, exist_ok=True)
    env = _env(folder)
    hold = _hold(env, folder) if case == "other_process" else None
    t0 = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "gputriage", "run", "--json", "--", sys.executable, str(EXAMPLES / f"{case}.py")],
            env=env,
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
        )
        (folder / "run.json").write_text(run.stdout)
        (folder / "run.stderr").write_text(run.stderr[-50_000:])
        code = run.returncode
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if hold is not None:
            hold.kill()
            hold.wait()
    row = {"case": case, "expected": CASES[case], "run_exit": code, "run_s": round(time.monotonic() - t0, 1)}
    row["run_cause"] = run_cause(folder, case, env)
    snaps = sorted(folder.glob("memory/run-*/memory-oom.*.pickle"))
    if not snaps:
        return {**row, "ok": False, "got": "no snapshot kept"}
    verdict = subprocess.run(
        [sys.executable, "-m", "gputriage", "memory", "--json", str(snaps[-1])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (folder / "memory.json").write_text(verdict.stdout)
    (folder / "memory.stderr").write_text(verdict.stderr)
    if verdict.returncode != 0:
        return {**row, "ok": False, "got": f"gputriage memory exit {verdict.returncode}: {verdict.stderr[:200]}"}
    ok, got = check(json.loads(verdict.stdout), case)
    ok = ok and row["run_cause"] == CASES[case]
    return {**row, "ok": ok, "got": got, "snapshot_bytes": snaps[-1].stat().st_size}


def run_cause(folder: Path, case: str, env: dict[str, str]) -> str:
    """The cause the run's own report named (`memory.cause` of `run --json`), and the run's samples cut from its
    store beside it (`run.samples.json.gz`: the recording the run judge replays with the snapshot, as
    `gputriage.testing.oom_runs` reads it)."""
    try:
        report = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        return "no run report"
    if report.get("id") is not None:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "store_to_fixture.py"),
                str(folder / "runs.sqlite"),
                str(folder / "run.samples.json.gz"),
                f"{case}={report['id']}",
            ],
            env=env,
            capture_output=True,
            timeout=120,
        )
    return ((report.get("memory") or {}).get("cause")) or "none"


def pack(folder: Path, out: Path) -> Path:
    path = out / f"oom_{folder.name}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(folder, arcname=folder.name, filter=lambda t: None if t.name.endswith(".sqlite") else t)
    return path


def _bench(script: str, args: list[str], out: Path, name: str, timeout: int) -> None:
    env = _env(out)
    try:
        r = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        (out / name).write_text(r.stdout + ("\n" + r.stderr[-5000:] if r.returncode else ""))
    except subprocess.TimeoutExpired as exc:
        (out / name).write_text(f"timed out after {timeout} s\n{exc.stdout or ''}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="where the files go ($OUT on the device)")
    ap.add_argument("--cases", default=",".join(CASES), help="which, comma-separated (default: all five)")
    ap.add_argument("--skip-cost", action="store_true", help="no cost benchmark")
    ap.add_argument("--cost-seconds", type=float, default=3.0)
    ap.add_argument("--dry-run", action="store_true", help="say what would run, run nothing")
    args = ap.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s): {', '.join(unknown)} (known: {', '.join(CASES)})")
    if args.dry_run:
        for c in cases:
            print(
                f"{c}: gputriage run --json -- python examples/oom/{c}.py; expects {CASES[c]}, "
                f"planted line {planted_line(c)}"
                + (f" (beside hold_memory.py {OTHER_SHARE})" if c == "other_process" else "")
            )
        print("then: benchmarks/memory_history_cost.py, benchmarks/memory_read_speed.py" * (not args.skip_cost))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gputriage-oom-"))  # outside OUT: only the packed files come back
    rows = []
    for c in cases:
        row = record(c, work)
        rows.append(row)
        pack(work / c, args.out)
        print(json.dumps(row), flush=True)
    if not args.skip_cost:
        _bench(
            "memory_history_cost.py", ["--pairs", "5", "--seconds", str(args.cost_seconds)], args.out, "cost.txt", 330
        )
        _bench("memory_read_speed.py", [], args.out, "read_speed.txt", 120)
    lines = [f"{'case':<14} {'ok':<3} {'exit':>4} {'s':>6}  got (the run's own report named)"]
    lines += [
        f"{r['case']:<14} {'yes' if r['ok'] else 'NO':<3} {r['run_exit']!s:>4} {r['run_s']:>6}  {r['got']} "
        f"({r.get('run_cause', '-')})"
        for r in rows
    ]
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Record the distributed examples (examples/distributed) on a machine of two GPUs with NCCL under `gputriage run`,
each rank on its GPU: a healthy bf16 DDP job, rank 1 sleeping 50 ms in its loader, host computation on rank 1, a
comm_bound job (1 GiB of bf16 gradients, 16 rows a GPU), a hang before an all-reduce (said after --hang-after 20);
then cut them into a fixture (tests/fixtures/ranks/runs_nccl.json.gz, as benchmarks/store_to_fixture.py does) and
write what each run said. With `--backend gloo` the same on CPU cores (how tests/fixtures/ranks/runs_gloo.json.gz was
recorded, but for the CPU-only cpu_hog case, which pins ranks to cores).

One device call of about 6 minutes; in OUT: the fixture (well under 16 MB), each run's JSON report and stderr in one
tar.gz, and summary.txt (the straggler and cause each run named, against what the example plants).

    python benchmarks/record_ranks.py --out "$OUT" [--backend nccl] [--cases slow_loader,hang] [--seconds 20]
    python benchmarks/record_ranks.py --out "$OUT" --backend gloo --one-gpu --size 1024,4,4096  # one GPU
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "distributed"
# case: (example, its arguments, the finding expected about rank 1: "none" for no straggler)
CASES = {
    "healthy": ("healthy.py", [], "none"),
    "slow_loader": ("slow_loader.py", [], "run.straggler_input"),
    "host_compute": ("host_compute.py", [], "run.straggler_host_compute"),
    "comm_bound": ("comm_bound.py", [], "none"),
    "hang": ("hang.py", ["--plant-s", "60"], "run.rank_hang"),
}
HANG_AFTER_S = "20"
CASE_TIMEOUT_S = 240


def record(
    case: str, backend: str, seconds: float, store: Path, out: Path, extra_args: tuple[str, ...] = ()
) -> tuple[str, int | None]:
    """One example under `gputriage run --store`: what it said about its ranks, and its run's id."""
    script, extra, _ = CASES[case]
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [sys.executable, "-m", "gputriage", "run", "--store", str(store), "--json", "--hang-after", HANG_AFTER_S]
    cmd += ["--", str(torchrun), "--standalone", "--nproc_per_node", "2", str(EXAMPLES / script)]
    cmd += ["--backend", backend, "--seconds", str(seconds), *extra, *extra_args]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", OMP_NUM_THREADS="1")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CASE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return "timed out", None
    (out / f"{case}.json").write_text(r.stdout)
    (out / f"{case}.stderr.txt").write_text(r.stderr)
    try:
        report = json.loads(r.stdout)
    except ValueError:
        return f"no report (exit {r.returncode}): {r.stderr.strip()[-300:]}", None
    named = ("run.straggler", "run.rank_hang", "run.waits_for")
    about = [f"{f['id']} ({f['subject']})" for f in report["findings"] if f["id"].startswith(named)]
    gpus = {k: v.get("bottleneck") for k, v in report["verdict"]["per_gpu"].items()}
    return f"{', '.join(about) or 'no straggler'}; verdicts {gpus}", report.get("id")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument(
        "--one-gpu",
        action="store_true",
        help="gloo with both ranks' models on GPU 0 (a machine of one GPU: the ranks' rows with a GPU's readings)",
    )
    ap.add_argument("--size", default="", help="the examples' DIM,LAYERS,BATCH (default: theirs)")
    args = ap.parse_args()
    extra_args: tuple[str, ...] = ("--device", "cuda") if args.one_gpu else ()
    if args.size:
        dim, layers, batch = args.size.split(",")
        extra_args += ("--dim", dim, "--layers", layers, "--batch", batch)
    name = f"{args.backend}_one_gpu" if args.one_gpu else args.backend
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gputriage-ranks-"))
    store = work / "ranks.sqlite"
    lines, ids = [], {}
    for case in args.cases.split(","):
        said, run_id = record(case, args.backend, args.seconds, store, work, extra_args)
        expected = CASES[case][2]
        lines.append(f"{case}: expected {expected}; said {said}")
        print(lines[-1], flush=True)
        if run_id is not None:
            ids[case] = run_id
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from store_to_fixture import cut  # the same cut as the other fixtures of runs

    from gputriage.sampling.store import Store

    db = Store(store, readonly=True)
    runs = {case: cut(db, run_id) for case, run_id in ids.items()}
    db.close()
    fixture = args.out / f"runs_{name}.json.gz"
    with gzip.open(fixture, "wt") as fh:
        json.dump(runs, fh, separators=(",", ":"))
    with tarfile.open(args.out / "reports.tar.gz", "w:gz") as tar:
        for f in sorted(work.glob("*.json")) + sorted(work.glob("*.stderr.txt")):
            tar.add(f, arcname=f.name)
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

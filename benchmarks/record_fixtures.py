"""Record real fixtures on a GPU machine: snapshots, check timings, 10 Hz sample streams and
Kineto traces of every pathology in examples/pathologies/. Writes under the directory given.

    python benchmarks/record_fixtures.py OUTDIR [--quick]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATHOLOGIES = [
    "healthy",
    "input_starved",
    "pageable_copy",
    "launch_bound",
    "item_sync",
    "fp32_no_tensor_cores",
    "unfused_elementwise",
    "small_batch",
    "vram_churn",
    "contended",
]


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def record_check(out: Path) -> None:
    gt = [sys.executable, "-m", "gputriage"]
    r = sh(gt + ["snapshot", "-o", str(out / "h200_idle.json")])
    print("snapshot idle:", r.returncode, r.stderr.strip()[-300:], flush=True)
    walls = []
    for k in range(5):
        t0 = time.perf_counter()
        r = sh(gt + ["check", "--json", "--fail-on", "never"])
        walls.append(time.perf_counter() - t0)
        if k == 0:
            (out / "check_idle.json").write_text(r.stdout)
            print("check rc", r.returncode, r.stderr[-500:], flush=True)
    (out / "check_timing.json").write_text(json.dumps({"walls_s": walls, "median_s": statistics.median(walls)}))
    print("check walls", [round(w, 3) for w in walls], flush=True)
    busy = subprocess.Popen(
        [sys.executable, str(ROOT / "examples/pathologies/healthy.py"), "--seconds", "30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(8)
    r = sh(gt + ["snapshot", "-o", str(out / "h200_busy.json")])
    print("snapshot busy:", r.returncode, r.stderr.strip()[-300:], flush=True)
    busy.kill()
    busy.wait()


def record_samples(out: Path, name: str, fixed: bool, seconds: float) -> None:
    import msgspec

    from gputriage.backends.host import Host
    from gputriage.backends.nvml import PynvmlBackend
    from gputriage.sampling.sampler import Cadences, Sampler

    nvml = PynvmlBackend(record=False)
    nvml.init()
    script = ROOT / "examples/pathologies" / f"{name}.py"
    argv = [sys.executable, str(script), "--seconds", str(seconds)] + (["--fixed"] if fixed else [])
    t0 = time.time()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=script.parent)
    samples: list = []
    sampler = Sampler(nvml, Host(), [0], cadences=Cadences(gpu_s=0.1), pid=child.pid, sinks=(samples.append,))
    sampler.start()
    text, _ = child.communicate(timeout=240)
    sampler.stop()
    nvml.shutdown()
    key = name + ("_fixed" if fixed else "")
    rec = {
        "argv": argv[1:],
        "started": t0,
        "wall": time.time() - t0,
        "returncode": child.returncode,
        "out": text[-2000:],
        "sampler_busy_s": sampler.busy_s,
        "samples": samples,
    }
    (out / "samples" / f"{key}.json").write_bytes(msgspec.json.encode(rec))
    print(f"samples {key}: {len(samples)} rows, rc {child.returncode}, {text.strip().splitlines()[-1:]}", flush=True)


def record_trace(out: Path, name: str, fixed: bool, steps: int = 10, suffix: str = "") -> None:
    key = name + ("_fixed" if fixed else "") + suffix
    path = out / "traces" / f"{key}.json"
    argv = [
        sys.executable,
        str(ROOT / "benchmarks/_trace_one.py"),
        str(ROOT / "examples/pathologies" / f"{name}.py"),
        str(path),
        "--steps",
        str(steps),
    ] + (["--fixed"] if fixed else [])
    r = sh(argv, timeout=240)
    size = path.stat().st_size if path.exists() else 0
    print(f"trace {key}: rc {r.returncode}, {size / 1e6:.1f} MB {r.stderr.strip()[-200:]}", flush=True)


def main() -> None:
    out = Path(sys.argv[1])
    quick = "--quick" in sys.argv
    (out / "samples").mkdir(parents=True, exist_ok=True)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    phases = (
        sys.argv[2].split(",")
        if len(sys.argv) > 2 and not sys.argv[2].startswith("--")
        else ["check", "samples", "traces", "big"]
    )
    if "check" in phases:
        record_check(out)
    if "traces" in phases:
        for name in PATHOLOGIES:
            record_trace(out, name, fixed=False, steps=20 if name == "launch_bound" else 10)
        for name in ("launch_bound", "item_sync", "pageable_copy", "input_starved"):
            record_trace(out, name, fixed=True)
    if "samples" in phases:
        for name in PATHOLOGIES[: 3 if quick else None]:
            for fixed in (False, True):
                if name == "healthy" and fixed:
                    continue
                record_samples(out, name, fixed, seconds=5.0)
    if "big" in phases:
        record_trace(out, "launch_bound", fixed=False, steps=450, suffix="_big")


if __name__ == "__main__":
    main()

"""gputriage.step(): free when nothing listens; under `run`, counters the sampler sums into the
workload's throughput (steady and per phase) and, with the model's FLOPs, its MFU."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest

from gputriage.model.run import GpuStatic, Regime
from gputriage.model.sample import Sample, WorkloadSample
from gputriage.sampling.progress import ProgressReader
from gputriage.sampling.windows import Windower

GT = [sys.executable, "-m", "gputriage"]


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def test_step_does_nothing_when_nothing_listens(tmp_path):
    r = _python(
        """
        import gputriage, gputriage.inworkload.progress as p
        for _ in range(1000):
            gputriage.step(samples=8, tokens=100)
        print(gputriage.step is p._nothing, p._view)
    """,
        {"GPUTRIAGE_PROGRESS_DIR": ""},
    )
    assert r.stdout.split() == ["True", "None"], r.stderr


@pytest.mark.parametrize("listening", [False, True])
def test_a_wrong_keyword_names_gputriage_step_whether_or_not_run_listens(tmp_path, listening):
    r = _python(
        """
        import gputriage
        gputriage.step(samples=8)
        gputriage.step(images=8)
    """,
        {"GPUTRIAGE_PROGRESS_DIR": str(tmp_path) if listening else ""},
    )
    assert r.returncode == 1
    assert "TypeError: gputriage.step() got an unexpected keyword argument 'images'" in r.stderr


def test_every_process_counts_in_a_file_of_its_own_and_the_reader_sums_them(tmp_path):
    r = _python(
        """
        import os, gputriage
        for _ in range(10):
            gputriage.step(samples=4, tokens=40)
        pid = os.fork()
        if pid == 0:  # a forked worker: its own counters, the parent's untouched
            gputriage.step(samples=1, steps=0)
            os._exit(0)
        os.waitpid(pid, 0)
        gputriage.step(samples=4, tokens=40)
    """,
        {"GPUTRIAGE_PROGRESS_DIR": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("progress.")]) == 2
    assert ProgressReader(tmp_path).totals() == (11.0, 45.0, 440.0)
    assert ProgressReader(tmp_path / "missing").totals() is None


def _windows(rates: list[float], t0: float = 1000.0) -> Windower:
    """One sample every 0.5 s whose step total grows at rates[k] steps/s during second k."""
    w = Windower([])
    total = 0.0
    for k, rate in enumerate(rates):
        for half in range(2):
            total += rate / 2
            w.add(
                Sample(
                    t_s=t0 + k + half / 2,
                    workload=WorkloadSample(steps_total=total, samples_total=total * 32, tokens_total=total * 32 * 512),
                )
            )
    w.close()
    return w


def test_throughput_over_the_steady_state_and_per_phase_from_the_counters():
    from gputriage.diagnosis.run.throughput import throughput

    w = _windows([0.0] * 3 + [10.0] * 10 + [2.0] * 5 + [0.0] * 2)
    timeline = [
        Regime(0.0, 3.0, "start-up"),
        Regime(3.0, 13.0, "compute_bound"),
        Regime(13.0, 18.0, "input_starved"),
        Regime(18.0, 20.0, "shut-down"),
    ]
    t = throughput(
        w.host,
        timeline,
        1000.0,
        [GpuStatic(name="NVIDIA H200", memory_total_bytes=150_754_820_096)],
        flops_per_token=6 * 1e9,
    )
    assert t is not None and 14.5 <= t.steady_s <= 15.0  # the body, within the steps (read every 0.5 s)
    assert t.steps_per_s == pytest.approx((100 + 10) / 15, rel=0.08)
    assert [p.regime for p in t.by_regime] == ["compute_bound", "input_starved"]
    assert t.by_regime[0].steps_per_s == pytest.approx(10.0, rel=0.1)
    assert t.by_regime[1].steps_per_s == pytest.approx(2.0, rel=0.15)
    assert t.samples_per_s == pytest.approx(32 * t.steps_per_s, rel=1e-4)
    # MFU against the H200's dense bf16 datasheet rate
    assert t.achieved_tflops == pytest.approx(6e9 * t.tokens_per_s / 1e12, rel=1e-3)
    assert (
        t.peak_tflops
        and 900 < t.peak_tflops < 1100
        and t.mfu_pct == pytest.approx(100 * t.achieved_tflops / t.peak_tflops, abs=0.1)
    )
    assert throughput(Windower([]).host, timeline, 1000.0, []) is None  # nothing reported: no throughput


def test_run_reports_the_throughput_the_workload_reported(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(
        "import time, gputriage\nt = time.time()\nwhile time.time() - t < 3:\n"
        "    time.sleep(0.02)\n    gputriage.step(samples=16, tokens=16 * 128)\n"
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = subprocess.run(
        GT + ["run", "--no-store", "--json", "--flops-per-token", "1e9", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    t = json.loads(r.stdout)["throughput"]
    assert 30 <= t["steps_per_s"] <= 52  # a 20 ms sleep a step, and the loop's own time
    assert t["samples_per_s"] == pytest.approx(16 * t["steps_per_s"], rel=1e-3)
    assert t["achieved_tflops"] == pytest.approx(1e9 * t["tokens_per_s"] / 1e12, rel=1e-2)
    assert "mfu_pct" not in t  # no GPU here: no datasheet to set it against
    assert not list(tmp.iterdir())  # the counters' folder is removed


LOUD = """
import sys, time
t = time.time(); i = 0
while time.time() - t < 2.5:
    time.sleep(0.05); i += 1
    print(f"step {i} loss 0.1 tokens/s: {1000 + i % 3:,}", flush=True)
    if i % 10 == 0:
        print("progress 50%|#####     | tokens/s: 5000\\r", end="", file=sys.stderr, flush=True)
print("done")
"""


def test_run_reads_the_throughput_the_workload_prints_and_passes_its_output_through(tmp_path):
    script = tmp_path / "loud.py"
    script.write_text(LOUD)
    r = subprocess.run(
        GT
        + [
            "run",
            "--no-store",
            "-o",
            str(tmp_path / "r.json"),
            "--metric",
            r"tokens/s: (\S+)",
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "step 1 loss 0.1 tokens/s: 1,001" in r.stdout and r.stdout.count("loss") >= 30  # stdout stays stdout
    assert "progress 50%" in r.stderr  # and stderr stays stderr, \r and all
    t = json.loads((tmp_path / "r.json").read_text())["throughput"]
    assert t["source"] == "output" and t["metric_pattern"] == r"tokens/s: (\S+)"
    assert t["metric_lines"] >= 30 and t["metric_median"] == 1001.0  # 1,000-1,002 printed; the bars' 5,000 rare
    assert "throughput: 1,001 (median of" in r.stderr  # the report, beside the workload's output
    bad = subprocess.run(
        GT + ["run", "--no-store", "--metric", "tokens/s: (", "--", sys.executable, "-c", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "--metric: not a regular expression" in bad.stderr


def test_mfu_is_also_set_against_the_bf16_rate_bench_measured_on_the_machine(tmp_path):
    """With a bench kept for the lead GPU, MFU is given against what its GPUs reach here as well (the H200's
    recorded bench: 756 TFLOP/s bf16, 76% of the datasheet), so the two MFUs differ by that ratio."""
    from gputriage.diagnosis.run.judge import judge
    from gputriage.model.run import RunMeta, Throughput
    from gputriage.model.sample import Sample
    from gputriage.runner.run_session import mfu_against_bench as _against_bench
    from gputriage.sampling.session import replay
    from gputriage.sampling.store import Store

    fixtures = Path(__file__).parent / "fixtures" / "h200"
    rec = json.loads(gzip.decompress((fixtures / "runs_typed.json.gz").read_bytes()))["gpt_loop"]
    meta = msgspec.convert(rec["meta"], RunMeta)
    report = judge(replay([msgspec.convert(s, Sample) for s in rec["samples"]], meta), 0)
    # the loop printed 567,020 tokens/s (it predates gputriage.step()); 6 x 20 M parameters per token
    t = report.throughput = Throughput(
        tokens_per_s=567_020.0,
        achieved_tflops=round(567_020 * 6 * 20e6 / 1e12, 2),
        peak_tflops=989.4,
        mfu_pct=round(100 * 567_020 * 6 * 20e6 / 1e12 / 989.4, 1),
    )
    bench = json.loads((fixtures / "bench_h200.json").read_text())["results"]
    db = Store(tmp_path / "s.sqlite")
    _against_bench(db, report)
    assert t.mfu_bench_pct is None  # no bench of this GPU kept
    db.add_bench(f"vm|{meta.gpus['0'].uuid}", bench)
    _against_bench(db, report)
    rate = next(r["value"] for r in bench if r["name"] == "matmul.bf16")
    assert t.bench_tflops == pytest.approx(rate, rel=1e-3)
    assert t.mfu_bench_pct == pytest.approx(t.mfu_pct * t.peak_tflops / rate, rel=0.01)
    assert t.mfu_bench_pct > t.mfu_pct and "gputriage bench" in (t.bench_source or "")

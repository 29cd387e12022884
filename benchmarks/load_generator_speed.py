"""How fast `gputriage load` can stream, and what it does to the latencies it reports: against
`stream_server.py` (a paced local server that keeps the time of each chunk it wrote), the server pinned to
one core and the generator to another. Per concurrency: the streamed tokens/s, the generator's event-loop
CPU (% of one core), and its TTFT and ITL medians against what the server actually sent. Medians of
`--runs` runs.

    python benchmarks/load_generator_speed.py --concurrency 25,50,100 --itl-ms 5 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return dict(json.loads(r.read()))


def _pin(core: int):  # type: ignore[no-untyped-def]
    return lambda: os.sched_setaffinity(0, {core}) if hasattr(os, "sched_setaffinity") else None


def one(url: str, c: int, tokens: int, seconds: float, core: int) -> dict:
    _get(url + "/sent?reset=1")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputriage",
            "load",
            url,
            "--concurrency",
            str(c),
            "--requests",
            str(100_000),
            "--seconds",
            str(seconds),
            "--input-tokens",
            "8",
            "--output-tokens",
            str(tokens),
            "--warmup",
            "1",
            "--no-gpus",
            "--no-metrics",
            "--no-store",
            "--json",
        ],
        capture_output=True,
        text=True,
        preexec_fn=_pin(core),
    )
    if r.returncode != 0:
        raise SystemExit(f"gputriage load failed: {r.stderr[-2000:]}")
    step = json.loads(r.stdout)["steps"][0]
    sent = _get(url + "/sent")
    return {
        "tok_s": step["output_tokens_per_s"],
        "cpu_pct": step["client_cpu_pct"],
        "ttft": step["ttft"]["p50_ms"],
        "ttft_sent": sent["ttft_p50_ms"],
        "itl": step["itl"]["p50_ms"],
        "itl_sent": sent["itl_p50_ms"],
        "itl_mean": step["itl"]["mean_ms"],
        "itl_mean_sent": sent["itl_mean_ms"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--concurrency", default="25,50,100")
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokens", type=int, default=200, help="output tokens per request")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port", type=int, default=8300)
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0, 1]
    server_core, client_core = cores[0], cores[-1]
    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "stream_server.py"),
            "--port",
            str(args.port),
            "--ttft-ms",
            str(args.ttft_ms),
            "--itl-ms",
            str(args.itl_ms),
        ],
        preexec_fn=_pin(server_core),
    )
    try:
        for _ in range(100):
            try:
                _get(url + "/v1/models")
                break
            except OSError:
                time.sleep(0.1)
        print(
            f"server: TTFT {args.ttft_ms:g} ms, a chunk every {args.itl_ms:g} ms, on core {server_core}; "
            f"generator on core {client_core}; medians of {args.runs} runs of {args.seconds:g} s"
        )
        print(
            f"{'conc':>5} {'tok/s':>8} {'gen CPU':>8} {'TTFT':>7} {'sent':>7} {'ITL p50':>8} {'sent':>7} "
            f"{'ITL mean':>9} {'sent':>7}"
        )
        for c in (int(x) for x in args.concurrency.split(",")):
            runs = [one(url, c, args.tokens, args.seconds, client_core) for _ in range(args.runs)]
            m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"{c:>5} {m['tok_s']:>8,.0f} {m['cpu_pct']:>7.0f}% {m['ttft']:>7.2f} {m['ttft_sent']:>7.2f} "
                f"{m['itl']:>8.2f} {m['itl_sent']:>7.2f} {m['itl_mean']:>9.2f} {m['itl_mean_sent']:>7.2f}"
            )
        print("latencies in ms: the generator's, then what the server sent")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()

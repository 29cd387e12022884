"""`gputriage load` side by side with NVIDIA's aiperf, on one server and one load, alternated: TTFT and
per-request inter-token latency medians (aiperf's `inter_token_latency` is (end - first token) / (tokens - 1)
per request: gputriage's TPOT), and each generator's own CPU per 1,000 streamed tokens. CPU is what the
tool's whole process tree spent (RUSAGE_CHILDREN); start-up is taken off by running each tool twice, with
few and with many requests, and dividing the difference by the difference in tokens.

    python benchmarks/load_vs_aiperf.py --url http://127.0.0.1:8000 --aiperf /path/to/venv/bin/aiperf \\
        --tokenizer /path/to/model
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def gputriage(url: str, c: int, n: int, isl: int, osl: int) -> tuple[float, dict]:
    cpu0 = _cpu()
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
            str(n),
            "--seconds",
            "600",
            "--input-tokens",
            str(isl),
            "--output-tokens",
            str(osl),
            "--warmup",
            "2",
            "--no-gpus",
            "--no-metrics",
            "--no-store",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    cpu = _cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"gputriage load failed: {r.stderr[-2000:]}")
    step = json.loads(r.stdout)["steps"][0]
    return cpu, {
        "ttft_ms": step["ttft"]["p50_ms"],
        "itl_ms": step["tpot"]["p50_ms"],
        "tokens": step["output_tokens_mean"] * step["ok"],
    }


def aiperf(binary: str, url: str, model: str, tokenizer: str, c: int, n: int, isl: int, osl: int) -> tuple[float, dict]:
    out = Path(tempfile.mkdtemp(prefix="aiperf-"))
    cpu0 = _cpu()
    r = subprocess.run(
        [
            binary,
            "profile",
            "--model",
            model,
            "--url",
            url,
            "--endpoint-type",
            "completions",
            "--streaming",
            "--concurrency",
            str(c),
            "--request-count",
            str(n),
            "--isl",
            str(isl),
            "--osl",
            str(osl),
            "--tokenizer",
            tokenizer,
            "--use-server-token-count",
            "--ui-type",
            "none",
            "--artifact-dir",
            str(out),
            "--num-warmup-requests",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    cpu = _cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"aiperf failed: {r.stdout[-2000:]}")
    d = json.loads((out / "profile_export_aiperf.json").read_text())
    return cpu, {
        "ttft_ms": d["time_to_first_token"]["p50"],
        "itl_ms": d["inter_token_latency"]["p50"],
        "tokens": d["output_token_count"]["sum"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", required=True)
    ap.add_argument("--aiperf", required=True, help="the aiperf command (installed in its own environment)")
    ap.add_argument("--model", help="as the server names it (default: its first in /v1/models)")
    ap.add_argument("--tokenizer", required=True, help="for aiperf's prompts (a local path)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--few", type=int, default=8)
    ap.add_argument("--many", type=int, default=48)
    ap.add_argument("--isl", type=int, default=32)
    ap.add_argument("--osl", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    import urllib.request

    model = args.model or json.loads(urllib.request.urlopen(args.url + "/v1/models").read())["data"][0]["id"]
    rows: dict[str, dict[str, list[float]]] = {"gputriage load": {}, "aiperf": {}}
    for _ in range(args.runs):
        for name in rows:

            def go(n: int, name: str = name) -> tuple[float, dict]:
                if name == "aiperf":
                    return aiperf(args.aiperf, args.url, model, args.tokenizer, args.concurrency, n, args.isl, args.osl)
                return gputriage(args.url, args.concurrency, n, args.isl, args.osl)

            cpu_few, few = go(args.few)
            cpu_many, many = go(args.many)
            per_1k = 1000 * (cpu_many - cpu_few) / max(1.0, many["tokens"] - few["tokens"])
            r = rows[name]
            for k, v in (("ttft_ms", many["ttft_ms"]), ("itl_ms", many["itl_ms"]), ("cpu_ms_per_1k", 1000 * per_1k)):
                r.setdefault(k, []).append(v)
    med = {name: {k: statistics.median(v) for k, v in r.items()} for name, r in rows.items()}
    print(f"{'generator':<16}{'TTFT p50 ms':>13}{'ITL p50 ms':>12}{'CPU ms / 1k tokens':>20}")
    for name, m in med.items():
        print(f"{name:<16}{m['ttft_ms']:>13.1f}{m['itl_ms']:>12.2f}{m['cpu_ms_per_1k']:>20.0f}")
    g, a = med["gputriage load"], med["aiperf"]
    print(
        f"gputriage / aiperf: TTFT {g['ttft_ms'] / a['ttft_ms']:.2f}, ITL {g['itl_ms'] / a['itl_ms']:.2f}, "
        f"CPU per token {g['cpu_ms_per_1k'] / a['cpu_ms_per_1k']:.2f}; medians of {args.runs} alternated runs, "
        f"concurrency {args.concurrency}, {args.many} requests of {args.isl} in / {args.osl} out"
    )


if __name__ == "__main__":
    main()

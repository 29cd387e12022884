"""The exporter's pages, read as a person or a Prometheus would: `live_scrape.py PATH` prints one page once;
`live_scrape.py metrics EVERY_S OUT` appends its gputriage_* series to OUT, each line after its Unix time, until
stopped. Used by benchmarks/live_long.sh against an exporter on 127.0.0.1:9400."""

import sys
import time
import urllib.request

KEEP = ("gputriage_regime", "gputriage_bottleneck", "gputriage_gpu_process", "gputriage_finding")


def get(path: str) -> str:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:9400/{path}", timeout=10).read().decode()
    except OSError as exc:
        return f"# unreachable: {exc}\n"


def main() -> None:
    if len(sys.argv) == 2:
        sys.stdout.write(get(sys.argv[1]))
        return
    while True:
        t = int(time.time())
        lines = [f"{t} {line}" for line in get(sys.argv[1]).splitlines() if line.startswith(KEEP)]
        with open(sys.argv[3], "a") as f:
            f.write("\n".join(lines) + "\n")
        time.sleep(float(sys.argv[2]))


if __name__ == "__main__":
    main()

"""Build a large Kineto trace by replicating the steps of a real one (times shifted, ids offset).

    python benchmarks/make_big_trace.py SOURCE.json[.gz] OUT.json --copies 5
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

ID_KEYS = ("External id", "correlation", "Ev Idx")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--copies", type=int, default=5)
    args = ap.parse_args()
    opener = gzip.open if args.source.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(args.source, "rt") as fh:
        data = json.load(fh)
    events = data.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + e.get("dur", 0) for e in timed)
    span = t1 - t0 + 1000.0
    head = json.dumps(data, indent=2)[:-2]  # without the closing "\n}"
    with open(args.out, "w") as out:
        out.write(head + ',\n  "traceEvents": [')
        first = True
        for k in range(args.copies):
            for e in events:
                if not isinstance(e.get("ts"), (int, float)) and k:
                    continue  # metadata once
                c = dict(e)
                if isinstance(c.get("ts"), (int, float)):
                    c["ts"] = c["ts"] + k * span
                if "id" in c and isinstance(c["id"], int):
                    c["id"] += k * 10_000_000
                if "args" in c and isinstance(c["args"], dict):
                    a = dict(c["args"])
                    for key in ID_KEYS:
                        if isinstance(a.get(key), int):
                            a[key] += k * 10_000_000
                    c["args"] = a
                out.write(("\n  " if first else ",\n  ") + json.dumps(c))
                first = False
        out.write("\n  ]\n}\n")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.0f} MB, {args.copies} copies)")


if __name__ == "__main__":
    main()

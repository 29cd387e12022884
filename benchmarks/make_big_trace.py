"""Build a large Kineto trace by replicating the steps of a real one (times shifted, ids offset), in the
profiler's own layout: each event's text is copied as Kineto wrote it, only its timestamp and ids changed,
so a reader's speed on the result is its speed on a trace of that size.

    python benchmarks/make_big_trace.py SOURCE.json[.gz] OUT.json --copies 5
    python benchmarks/make_big_trace.py SOURCE.json[.gz] OUT.json --mb 80
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

EVENT_START = "\n  {"
ID_OFFSET = 10_000_000
_TS = re.compile(r'"ts": (-?[0-9.]+)')
_IDS = re.compile(r'"(External id|correlation|Ev Idx|id)": ?(\d+)')


def read_text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def split(text: str) -> tuple[str, list[str], str]:
    """The text before the first event, each event's text (from its `\\n  {`), and the closing text."""
    key = text.index('"traceEvents"')
    first = text.index(EVENT_START, key)
    close = text.rindex("\n  ]")
    return text[:first], text[first:close].split(EVENT_START)[1:], text[close:]


def span_us(events: list[str]) -> float:
    stamps = [(float(m.group(1)), e) for e in events if (m := _TS.search(e))]
    ends = [t + float(json.loads("{" + e.rstrip().rstrip(",")).get("dur", 0) or 0) for t, e in stamps]
    return max(ends) - min(t for t, _ in stamps) + 1000.0


def shifted(event: str, k: int, span: float) -> str:
    if not k:
        return event
    event = _TS.sub(lambda m: f'"ts": {float(m.group(1)) + k * span:.3f}', event, count=1)
    return _IDS.sub(lambda m: f'"{m.group(1)}": {int(m.group(2)) + k * ID_OFFSET}', event)


def build(source: Path, out: Path, copies: int) -> int:
    """Write `copies` copies of the source's events to `out`; its size in bytes."""
    head, events, tail = split(read_text(source))
    timed = [e for e in events if '"ph": "X"' in e or '"ph": "f"' in e or '"ph": "s"' in e]
    span = span_us(timed)
    with open(out, "w") as fh:
        fh.write(head)
        for k in range(copies):
            for e in events if k == 0 else timed:
                body = shifted(e, k, span).rstrip()
                fh.write(EVENT_START + (body if body.endswith(",") else body + ","))
        fh.write(EVENT_START + '"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 0\n  }')
        fh.write(tail)
    return out.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--copies", type=int, default=None)
    ap.add_argument("--mb", type=float, default=None, help="copies enough for about this many MB")
    args = ap.parse_args()
    copies = args.copies or 5
    if args.mb:
        size = len(read_text(args.source).encode())
        copies = max(1, round(args.mb * 1e6 / size))
    size = build(args.source, args.out, copies)
    print(f"wrote {args.out} ({size / 1e6:.0f} MB, {copies} copies)")


if __name__ == "__main__":
    main()

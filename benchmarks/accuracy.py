"""How often the rules name the cause each recorded case should get: every run, trace and load test under
tests/fixtures, listed with its expected cause in tests/fixtures/cases.toml, replayed through today's rules.
Prints the table by expected cause (cases, right, wrong, and what the wrong ones got) and the total; exits 1 when a
case right in tests/fixtures/accuracy_baseline.json is wrong now, 2 when the manifest or a fixture cannot be read.

    python benchmarks/accuracy.py [--json] [--markdown docs/accuracy.md] [--update-baseline]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gputriage.testing.accuracy import (
    ManifestError,
    as_json,
    baseline_json,
    load_baseline,
    load_manifest,
    regressions,
    replay,
)
from gputriage.testing.accuracy_page import markdown, text

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
MANIFEST = FIXTURES / "cases.toml"
BASELINE = FIXTURES / "accuracy_baseline.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the outcome of every case as JSON")
    parser.add_argument("--markdown", metavar="PATH", type=Path, help="write the generated docs page there")
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="the cases (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="the ids right before (default: %(default)s)")
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="write the cases right now as the baseline (after a change that makes more right)",
    )
    args = parser.parse_args(argv)
    try:
        outcomes = replay(load_manifest(args.manifest), args.manifest.parent)
        right_before = set() if args.update_baseline else load_baseline(args.baseline)
    except ManifestError as exc:
        print(f"accuracy: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(as_json(outcomes), indent=1) if args.json else text(outcomes), end="" if not args.json else "\n")
    if args.markdown:
        args.markdown.write_text(markdown(outcomes))
    if args.update_baseline:
        args.baseline.write_text(baseline_json(outcomes))
        return 0
    lost = regressions(outcomes, right_before)
    for line in lost:
        print(f"accuracy: {line}", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())

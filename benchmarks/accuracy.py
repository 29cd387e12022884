"""How often the rules name the cause each recorded case should get: every run, trace and load test under
tests/fixtures, listed with its expected cause in tests/fixtures/cases.toml, replayed through today's rules.
Prints precision and recall by source and by cause, the confusion matrix, the wrong cases and the total; exits 1
when a case right in tests/fixtures/accuracy_baseline.json is wrong now, 2 when the manifest, a fixture or an
answers file cannot be read.

With --answers FILE (a JSON object of case id → cause, or a load's list of finding ids), scores that file instead:
another tool's answers on the same cases, those it leaves out counted as unanswered (docs/benchmark.md).

    python benchmarks/accuracy.py [--json] [--markdown docs/accuracy.md] [--update-baseline]
    python benchmarks/accuracy.py --export-answers ours.json
    python benchmarks/accuracy.py --answers theirs.json [--markdown theirs.md]
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
    sources,
)
from gputriage.testing.accuracy_page import answers_markdown, answers_text, markdown, text
from gputriage.testing.accuracy_score import exported, read_answers, scored

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
MANIFEST = FIXTURES / "cases.toml"
BASELINE = FIXTURES / "accuracy_baseline.json"


def parse(argv: list[str] | None) -> argparse.Namespace:
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
    parser.add_argument(
        "--answers", metavar="FILE", type=Path, help="score this file's answers (case id → cause) instead of ours"
    )
    parser.add_argument("--name", help="the tool an answers file comes from (default: the file's name)")
    parser.add_argument(
        "--export-answers", metavar="FILE", type=Path, help="write our answers there, as --answers reads them"
    )
    return parser.parse_args(argv)


def score_answers(args: argparse.Namespace) -> int:
    """Another tool's answers: the same tables, nothing judged again."""
    try:
        cases = load_manifest(args.manifest)
        tool = scored(cases, sources(cases, args.manifest.parent), read_answers(args.answers))
    except ManifestError as exc:
        print(f"accuracy: {exc}", file=sys.stderr)
        return 2
    name = args.name or args.answers.stem
    print(answers_text(tool, name), end="")
    if args.markdown:
        args.markdown.write_text(answers_markdown(tool, name))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.answers is not None:
        return score_answers(args)
    try:
        outcomes = replay(load_manifest(args.manifest), args.manifest.parent)
        right_before = set() if args.update_baseline else load_baseline(args.baseline)
    except ManifestError as exc:
        print(f"accuracy: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(as_json(outcomes), indent=1) if args.json else text(outcomes), end="" if not args.json else "\n")
    if args.markdown:
        args.markdown.write_text(markdown(outcomes))
    if args.export_answers:
        args.export_answers.write_text(json.dumps(exported(outcomes), indent=1) + "\n")
    if args.update_baseline:
        args.baseline.write_text(baseline_json(outcomes))
        return 0
    lost = regressions(outcomes, right_before)
    for line in lost:
        print(f"accuracy: {line}", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())

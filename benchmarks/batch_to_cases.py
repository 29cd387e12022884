"""Turn what `benchmarks/live_batch.py` recorded on a GPU machine into accuracy cases: the runs of its store cut into
one fixture (`store_to_fixture.cut`), each named after its script (and its mode, where not the default), and the
`[[case]]` entries for tests/fixtures/cases.toml printed, each expecting the cause its script's docstring named
before it was run (`live_batch.expected`).

    python benchmarks/batch_to_cases.py BATCH_DIR tests/fixtures/h100/runs_libraries.json.gz [--held-out a,b]

BATCH_DIR is live_batch's `--out` (its `table.json` and `runs.sqlite`); the runs are matched to the table's rows in
the order both were made. `--held-out`: scripts written beside the others but not used to make the rules (their
cases say so).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from gputriage.sampling.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_batch import WORKLOADS, expected
from store_to_fixture import cut

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def script_of(stem: str) -> Path:
    """The script a live_batch row ran, by its name (`cupy_small_kernels`; a name with arguments, `gpt_loop--fixed`)."""
    name = stem.split("--")[0]
    return next(WORKLOADS.parent.rglob(f"{name}.py"), WORKLOADS / f"{name}.py")


def fixture_name(path: Path) -> str:
    """The fixture's path as the manifest names it (under tests/fixtures), or as given."""
    try:
        return str(path.resolve().relative_to(FIXTURES))
    except ValueError:
        return str(path)


def first_sentence(script: Path) -> str:
    doc = " ".join(script.read_text().split('"""')[1].split())
    return doc.split(". ")[0].rstrip(".")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("batch", type=Path)
    p.add_argument("fixture", type=Path)
    p.add_argument("--held-out", default="", help="comma-separated script names held out of the rules' making")
    a = p.parse_args()
    rows = [r for r in json.loads((a.batch / "table.json").read_text()) if "skipped" not in r and "error" not in r]
    store = Store(str(a.batch / "runs.sqlite"), readonly=True)
    ids = sorted(r["id"] for r in store.runs(10_000))
    if len(ids) != len(rows):
        raise SystemExit(f"{len(ids)} runs in the store, {len(rows)} reported rows: match them by hand")
    held = {h for h in a.held_out.split(",") if h}
    out, cases = {}, []
    for rid, row in zip(ids, rows):
        stem = row["workload"].split("/")[-1]
        key = stem if row["mode"] == "default" else f"{stem}.{row['mode']}"
        out[key] = cut(store, rid)
        script = script_of(stem)
        why = first_sentence(script) + f" ({script.relative_to(WORKLOADS.parent.parent)}, {row['mode']})"
        if stem in held:
            why += ", held out of the rules' making"
        fixture = fixture_name(a.fixture)
        cases.append(
            f'[[case]]\nid = "{a.fixture.name.split(".")[0]}/{key}"\nkind = "run"\nfixture = "{fixture}"\n'
            f'key = "{key}"\nexpected = "{expected(script)}"\nwhy = {json.dumps(why)}\n'
        )
    a.fixture.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(a.fixture, "wt") as fh:
        json.dump(out, fh, separators=(",", ":"))
    print(f"\n# --- {fixture_name(a.fixture)}\n")
    print("\n".join(cases))


if __name__ == "__main__":
    main()

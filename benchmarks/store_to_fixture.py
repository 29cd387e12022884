"""Cut the runs of a store that `gputriage run --store` filled on a GPU machine into a fixture for the CPU
tests: per run its command, meta, exit code, the verdicts given then, the `profile` section of its report
(the windows the profiler was asked for) and every sample.

    python benchmarks/store_to_fixture.py STORE.sqlite OUT.json.gz NAME=RUN_ID [NAME=RUN_ID ...]
    python benchmarks/store_to_fixture.py STORE.sqlite --list
"""

from __future__ import annotations

import gzip
import json
import sys

import msgspec

from gputriage.sampling.store import Store


def cut(store: Store, run_id: int) -> dict:
    run = store.run(run_id)
    if run is None:
        raise SystemExit(f"no run {run_id} in the store")
    report = json.loads(run["report"]) if run.get("report") else {}
    verdict = report.get("verdict") or {}
    lead = next(iter((verdict.get("per_gpu") or {}).values()), {})
    return {
        **({"kind": run["kind"]} if run.get("kind", "run") != "run" else {}),
        "command": run["command"],
        "meta": run["meta"],
        "exit_code": run["exit_code"],
        "verdict": lead.get("bottleneck"),
        "merged": verdict.get("bottleneck"),
        "profile": {k: v for k, v in (report.get("profile") or {}).items() if k != "trace"}
        | ({"trace": report["profile"]["trace"]} if (report.get("profile") or {}).get("trace") else {})
        if report.get("profile")
        else None,
        **({"compile": report["compile"]} if report.get("compile") else {}),
        "samples": [msgspec.to_builtins(s) for s in store.samples(run_id)],
    }


def main() -> None:
    store = Store(sys.argv[1], readonly=True)
    if sys.argv[2] == "--list":
        for r in reversed(store.runs(500)):
            print(r["id"], r["bottleneck"], " ".join(r["command"])[-90:])
        return
    out = {}
    for arg in sys.argv[3:]:
        name, rid = arg.split("=")
        out[name] = cut(store, int(rid))
    with gzip.open(sys.argv[2], "wt") as fh:
        json.dump(out, fh, separators=(",", ":"))


if __name__ == "__main__":
    main()

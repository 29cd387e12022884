"""The JSON Schemas of every report kind, generated from the types (`schemas/*.schema.json`)."""

from __future__ import annotations

from typing import Any

import msgspec

from gputriage.model.baseline import Baseline, Diff
from gputriage.model.bench import BenchReport
from gputriage.model.catalog import Catalog
from gputriage.model.check import CheckReport
from gputriage.model.checklist import ChecklistReport
from gputriage.model.fleet import FleetReport
from gputriage.model.load import LoadReport
from gputriage.model.memory import MemoryReport
from gputriage.model.ranks import JoinReport
from gputriage.model.run import RunReport
from gputriage.model.trace import TraceReport

REPORTS: dict[str, type] = {
    "check": CheckReport,
    "run": RunReport,
    "trace": TraceReport,
    "bench": BenchReport,
    "rules": Catalog,
    "baseline": Baseline,
    "diff": Diff,
    "checklist": ChecklistReport,
    "load": LoadReport,
    "fleet": FleetReport,
    "memory": MemoryReport,
    "join": JoinReport,
}


def schema(kind: str) -> dict[str, Any]:
    out = msgspec.json.schema(REPORTS[kind])
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["$id"] = f"https://gputriage.dev/schemas/{kind}.schema.json"
    return out


def main(folder: str) -> None:
    import json
    from pathlib import Path

    for kind in REPORTS:
        Path(folder, f"{kind}.schema.json").write_text(json.dumps(schema(kind), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1] if len(sys.argv) > 1 else "schemas")

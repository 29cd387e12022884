"""What one profile window cost the workloads recorded on an H200 (`tests/fixtures/h200/runs_*.json.gz`): how long
the profiler held each workload (from its start, CUPTI starting up and draining the GPU's queue, to its export's
end), the window traced inside that, and the lead GPU's GPU-Util while held against the rest of its steady run.

    python benchmarks/profiler_cost.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gputriage.testing.recordings import judged, load_runs  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "h200"


def main() -> None:
    held, traced, rows = [], [], []
    for path in sorted(FIXTURES.glob("runs_*.json.gz")):
        for name, rec in load_runs(path).items():
            p = rec.get("profile") if isinstance(rec, dict) else None
            holds = (p or {}).get("held_all_s") or ([p["held_s"]] if p and p.get("held_s") else [])
            if not holds:
                continue
            for a, b in holds:
                held.append(b - a)
            w = p.get("window_s")
            if w:
                traced.append(w[1] - w[0])
            effect = judged(rec).profile.effects.get("0") if p else None
            rows.append(
                (
                    f"{path.stem.removesuffix('.json')}/{name}",
                    sum(b - a for a, b in holds),
                    effect.held_pct if effect else None,
                    effect.inside_pct if effect else None,
                    effect.outside_pct if effect else None,
                )
            )
    print(f"{'run':48} {'held s':>7} {'held %':>7} {'traced %':>8} {'else %':>7}")
    for name, s, h, i, o in rows:

        def pct(x: float | None) -> str:
            return f"{x:.0f}" if x is not None else "-"

        print(f"{name:48} {s:7.2f} {pct(h):>7} {pct(i):>8} {pct(o):>7}")
    q = statistics.quantiles(held, n=10)
    print(
        f"\n{len(held)} holds in {len(rows)} runs: median {statistics.median(held):.2f} s, 10th-90th percentile "
        f"{q[0]:.2f}-{q[-1]:.2f} s, longest {max(held):.2f} s; windows traced: median "
        f"{statistics.median(traced):.2f} s"
    )


if __name__ == "__main__":
    main()

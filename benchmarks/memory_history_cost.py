"""What recording allocation stacks costs a workload, and what `gputriage run` costs it by default with the history
setting chosen (stacks armed once the GPU is 75% full, and only while the workload allocates slowly enough to
record them within 1% of its time: `gputriage.inworkload.memory_history`). Needs a GPU.

Loops, each in a child process whose rate is measured inside it after a warm-up:
  alloc       allocation-heavy: 128 small tensors a step (elementwise ops on 1 MiB tensors), the recording's worst
              case, from which one allocation's cost is taken
  train       a steady training loop: a transformer encoder (8 layers, d=1024), AdamW, bf16 autocast, 16x512
  train_full  the same with the GPU 80% full (a ballast tensor): where `run`'s default may arm the stacks
Settings against the bare loop (`python LOOP`):
  run         gputriage run -- python LOOP  (the default)
  stacks      GPUTRIAGE_MEMORY_HISTORY=on gputriage run -- python LOOP  (recorded from the start)
Bare and the setting alternate, `--pairs` times; the table gives the median of the ratios.

    python benchmarks/memory_history_cost.py [--pairs 5] [--seconds 4] [--only alloc,train]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time, torch
loop, seconds = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
if loop == "alloc":
    xs = [torch.randn(1 << 18, device="cuda") for _ in range(8)]
    def step():
        y = xs[0]
        for i in range(64):  # two allocations an iteration
            y = y * 1.0001 + xs[i % 8]
        return y
else:
    layer = torch.nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, device="cuda")
    model = torch.nn.TransformerEncoder(layer, 8, enable_nested_tensor=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 512, 1024, device="cuda")
    if loop == "train_full":
        free, total = torch.cuda.mem_get_info()
        ballast = torch.empty(max(0, int(0.8 * total) - (total - free)), dtype=torch.uint8, device="cuda")
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
def run_for(s):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < s:
        step()
        n += 1
        if n % 20 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0
run_for(1.0)  # warm-up: the allocator's cache, cuBLAS, the optimizer's state; the stacks armed if they will be
count = lambda: torch.cuda.memory_stats().get("allocation.all.allocated", 0)
a0 = count()
steps, took = run_for(seconds)
armed = getattr(torch._C, "_cuda_isHistoryEnabled", lambda: None)()
with open(os.environ["RESULT_FILE"], "w") as fh:
    json.dump({"rate": steps / took, "allocs_per_step": (count() - a0) / max(steps, 1), "armed": armed}, fh)
"""

LOOPS = {"alloc": ("stacks",), "train": ("run",), "train_full": ("run",)}


def once(loop: str, setting: str, seconds: float) -> dict:
    """One child's figures: steps a second, allocations a step, whether the stacks were recorded at the end."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, RESULT_FILE=str(Path(tmp, "result.json")))
        env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["GPUTRIAGE_STORE"] = str(Path(tmp, "runs.sqlite"))
        env.pop("GPUTRIAGE_MEMORY_HISTORY", None)
        child = [sys.executable, "-c", CHILD, loop, str(seconds)]
        if setting == "bare":
            argv = child
        else:
            if setting == "stacks":
                env["GPUTRIAGE_MEMORY_HISTORY"] = "on"
            argv = [sys.executable, "-m", "gputriage", "run", "--no-profile", "--", *child]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        path = Path(tmp, "result.json")
        if not path.exists():
            raise RuntimeError(f"{loop}/{setting} gave no result (exit {done.returncode}): {done.stderr[-2000:]}")
        return json.loads(path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--only", default=",".join(LOOPS), help="loops, comma-separated")
    args = ap.parse_args()
    print(
        f"{'loop':<11} {'setting':<7} {'bare steps/s':>12} {'with':>10} {'cost':>7} {'cost range':>15} "
        f"{'allocs/step':>11} {'armed':>6}"
    )
    per_alloc = []
    for loop in [x for x in args.only.split(",") if x]:
        for setting in LOOPS[loop]:
            bare, with_, ratios, armed, allocs = [], [], [], set(), []
            for _ in range(args.pairs):
                b = once(loop, "bare", args.seconds)
                w = once(loop, setting, args.seconds)
                bare.append(b["rate"])
                with_.append(w["rate"])
                ratios.append(1.0 - w["rate"] / b["rate"])
                armed.add(w["armed"])
                allocs.append(b["allocs_per_step"])
                if loop == "alloc" and setting == "stacks":  # what one allocation's stack costs
                    per_alloc.append((1 / w["rate"] - 1 / b["rate"]) / max(b["allocs_per_step"], 1))
            cost = statistics.median(ratios)
            # what recording every allocation's stack would cost this loop, at the alloc loop's figure
            each = statistics.median(per_alloc) if per_alloc else None
            would = None if each is None else statistics.median(allocs) * each * statistics.median(bare)
            print(
                f"{loop:<11} {setting:<7} {statistics.median(bare):>12,.1f} {statistics.median(with_):>10,.1f} "
                f"{cost:>7.2%} {min(ratios):>+7.2%}..{max(ratios):<+7.2%} {statistics.median(allocs):>11,.0f} "
                f"{'/'.join(str(a) for a in sorted(armed, key=str)):>6} "
                f"{'-' if would is None else f'{would:.2%}':>8}",
                flush=True,
            )
    if per_alloc:
        us = statistics.median(per_alloc) * 1e6
        print(
            f"one allocation's Python stack recorded: {us:.2f} µs (median of {len(per_alloc)} pairs of the alloc loop)"
        )
        print(f"the budget of 1% then affords {0.01 / (us / 1e6):,.0f} allocations a second")


if __name__ == "__main__":
    main()

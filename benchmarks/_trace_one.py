"""Profile a few steps of one pathology with torch.profiler and write a Kineto chrome trace.

python benchmarks/_trace_one.py examples/pathologies/launch_bound.py OUT.json [--fixed] [--steps N]
"""

import importlib.util
import os
import sys

import torch


def main() -> None:
    path, out = sys.argv[1], sys.argv[2]
    fixed = "--fixed" in sys.argv
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 10
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("pathology", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    step, _ = mod.build(fixed)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=1, warmup=2, active=steps)
    with torch.profiler.profile(
        activities=acts,
        schedule=sched,
        record_shapes=True,
        with_flops=True,
        on_trace_ready=lambda p: p.export_chrome_trace(out),
    ) as prof:
        for _ in range(steps + 3):
            step()
            prof.step()
    torch.cuda.synchronize()
    print(f"wrote {out}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # torch 2.11 can segfault at interpreter shutdown after profiling


if __name__ == "__main__":
    main()

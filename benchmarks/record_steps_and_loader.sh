#!/usr/bin/env bash
# Record, on one GPU, the runs the step-rate regimes and the DataLoader workers' rules rest on, into a fixture for
# the CPU tests ($OUT/runs_steps_loader.json.gz) with each run's terminal report beside it:
#   longer_steps                its sequences get 5x longer half-way: the step rate falls ~5x, the GPU stays busy
#   workers_augment_loader      4 DataLoader workers augmenting images feed a starved GPU (all the host's cores)
#   workers_augment_two_cores   the same held to 2 cores (taskset): 4 workers for 2 cores
# Run from the repository root: OUT=/some/folder benchmarks/record_steps_and_loader.sh
set -euo pipefail
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
store="$OUT/runs.sqlite"
gt() { python3 -m gputriage run --store "$store" -- "$@" > "$OUT/$name.txt" 2>&1 || true; }
name=longer_steps gt python3 examples/workloads/longer_steps.py --seconds 60
name=workers_augment_loader gt python3 examples/workloads/workers_augment.py --seconds 20
name=workers_augment_two_cores gt taskset -c 0,1 python3 examples/workloads/workers_augment.py --seconds 20
python3 benchmarks/store_to_fixture.py "$store" --list > "$OUT/runs.txt"
python3 benchmarks/store_to_fixture.py "$store" "$OUT/runs_steps_loader.json.gz" \
  longer_steps=1 workers_augment_loader=2 workers_augment_two_cores=3
rm -f "$store"

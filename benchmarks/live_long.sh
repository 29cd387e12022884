#!/usr/bin/env bash
# On a GPU machine: a job that changes regime (3 min under `gputriage run`), then two processes on one GPU, one
# computing and one holding 20 GiB idle, recorded by `gputriage snapshot`, `check --json` and
# benchmarks/record_holders.py. Results under $1.
set -u
out=${1:?output folder}
py=${PYTHON:-python3}
$py -m gputriage run --store "$out/long.sqlite" -o "$out/regime_shift.json" --quiet -- \
  $py examples/workloads/regime_shift.py --seconds "${REGIME_S:-180}" > "$out/regime_shift.log" 2>&1
echo "regime_shift rc=$?"
$py examples/workloads/idle_holder.py --seconds 80 --gib 20 > "$out/idle_holder.log" 2>&1 &
holder=$!
for _ in $(seq 60); do grep -q holding "$out/idle_holder.log" 2>/dev/null && break; sleep 1; done
$py -m gputriage run --store "$out/long.sqlite" -o "$out/healthy_beside_holder.json" --quiet -- \
  $py examples/pathologies/healthy.py --seconds 50 > "$out/healthy.log" 2>&1 &
runner=$!
sleep 25
$py benchmarks/record_holders.py "$out/holders.json" --seconds 10
$py -m gputriage snapshot -o "$out/snapshot_holders.json"
$py -m gputriage check --json > "$out/check_holders.json"
wait $runner; echo "healthy beside holder rc=$?"
kill $holder 2>/dev/null; wait $holder 2>/dev/null

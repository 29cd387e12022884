#!/usr/bin/env bash
# On a GPU machine: a long job that changes regime, and a GPU shared with a process that holds memory idle, seen by
# `gputriage run`, a `watch` and an exporter that outlive the calls of a lease. Three phases:
#
#   benchmarks/live_long.sh start  STATE        a process holding 20 GiB idle (idle_holder.py), then a `watch` and an
#                                               exporter in their own sessions, and a scraper keeping the exporter's
#                                               gputriage_* series every 5 s, all writing under STATE
#   benchmarks/live_long.sh regime STATE WORK   regime_shift.py under `gputriage run` (REGIME_S, 200 s by default), a
#                                               profile asked from another terminal (`gputriage profile RUN`) in its
#                                               last regime, the HTML report
#   benchmarks/live_long.sh exporter STATE WORK an exporter (regime series, /stacks) scraped every 5 s while
#                                               regime_shift.py runs under `gputriage run --profile` (a profile at
#                                               the steady state, re-armed in each new regime); /stacks asked
#                                               mid-run; the last scrape
#   benchmarks/live_long.sh finish STATE WORK   healthy.py beside the holder: NVML's view (record_holders.py),
#                                               `snapshot`, `check --json`, a short `watch` dumping stacks with
#                                               py-spy, the exporter's /stacks; then, once the watch has seen the
#                                               holder for WATCH_MIN_S (630 s), the watch stopped with SIGTERM and its
#                                               report kept, a last scrape, everything stopped
#
# Results under WORK; PYTHON (python3) runs everything.
set -u
phase=${1:?start, regime or finish}
state=${2:?state folder}
py=${PYTHON:-python3}
mkdir -p "$state"
scrape() { $py benchmarks/live_scrape.py "$1"; }

case $phase in
start)
  date +%s > "$state/t0"
  setsid $py examples/workloads/idle_holder.py --seconds 1800 --gib 20 > "$state/idle_holder.log" 2>&1 < /dev/null &
  for _ in $(seq 60); do grep -q holding "$state/idle_holder.log" 2>/dev/null && break; sleep 1; done
  setsid $py -m gputriage watch --store "$state/watch.sqlite" --seconds 1500 --stacks-every 0 \
    > "$state/watch.log" 2>&1 < /dev/null &
  setsid $py -m gputriage exporter --port 9400 --check-every 60 > "$state/exporter.log" 2>&1 < /dev/null &
  sleep 5
  setsid $py benchmarks/live_scrape.py metrics 5 "$state/scrapes.txt" > /dev/null 2>&1 < /dev/null &
  echo "started: $(cat "$state/idle_holder.log")"
  ;;
regime)
  work=${3:?work folder}; mkdir -p "$work"
  $py -m gputriage run --store "$work/long.sqlite" -o "$work/regime_shift.json" --quiet -- \
    $py examples/workloads/regime_shift.py --seconds "${REGIME_S:-200}" > "$work/regime_shift.log" 2>&1 &
  runner=$!
  sleep "$(( ${REGIME_S:-200} * 5 / 6 ))"
  id=$($py -m gputriage runs --store "$work/long.sqlite" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
  $py -m gputriage profile "$id" --store "$work/long.sqlite" --out "$work/asked_profile.json" --wait 60 --json \
    > "$work/profile_asked.json" 2>&1
  echo "profile asked of run $id rc=$?"
  wait $runner; echo "regime_shift rc=$?"
  $py -m gputriage report "$id" --store "$work/long.sqlite" -o "$work/regime_shift.html" > /dev/null 2>&1
  echo "report rc=$?"
  ;;
exporter)
  work=${3:?work folder}; mkdir -p "$work"
  setsid $py -m gputriage exporter --port 9400 --check-every 60 > "$work/exporter.log" 2>&1 < /dev/null &
  sleep 5
  setsid $py benchmarks/live_scrape.py metrics 5 "$work/scrapes.txt" > /dev/null 2>&1 < /dev/null &
  $py -m gputriage run --profile --store "$work/long.sqlite" -o "$work/regime_shift_profiled.json" --quiet -- \
    $py examples/workloads/regime_shift.py --seconds "${REGIME_S:-150}" > "$work/regime_shift.log" 2>&1 &
  runner=$!
  sleep "$(( ${REGIME_S:-150} / 2 ))"
  scrape stacks > "$work/exporter_stacks.json"
  wait $runner; echo "regime_shift --profile rc=$?"
  sleep 6
  scrape metrics > "$work/metrics_final.txt"
  pkill -f "gputriage exporter"; pkill -f "live_scrape.py metrics"
  $py -m gputriage report 1 --store "$work/long.sqlite" -o "$work/regime_shift_profiled.html" > /dev/null 2>&1
  ;;
finish)
  work=${3:?work folder}; mkdir -p "$work"
  $py -m gputriage run --store "$work/long.sqlite" -o "$work/healthy_beside_holder.json" --quiet -- \
    $py examples/pathologies/healthy.py --seconds 45 > "$work/healthy.log" 2>&1 &
  runner=$!
  sleep 20
  $py benchmarks/record_holders.py "$work/holders.json" --seconds 10
  $py -m gputriage snapshot -o "$work/snapshot_holders.json" > /dev/null 2>&1
  $py -m gputriage check --json > "$work/check_holders.json" 2> "$work/check_holders.err"
  $py -m gputriage watch --no-store --seconds 12 --stacks-every 4 > "$work/watch_stacks.txt" 2>&1
  scrape stacks > "$work/exporter_stacks.json"
  wait $runner; echo "healthy beside holder rc=$?"
  t0=$(cat "$state/t0")
  while [ $(( $(date +%s) - t0 )) -lt "${WATCH_MIN_S:-630}" ]; do sleep 5; done
  scrape metrics > "$work/metrics_final.txt"
  pkill -TERM -f "gputriage watch --store" ; for _ in $(seq 60); do pgrep -f "gputriage watch --store" > /dev/null || break; sleep 1; done
  id=$($py -m gputriage runs --store "$state/watch.sqlite" --json | $py -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
  $py -m gputriage show "$id" --store "$state/watch.sqlite" --json > "$work/watch_holder.json" 2>&1
  echo "watch report rc=$?"
  pkill -f "gputriage exporter"; pkill -f "live_scrape.py metrics"; pkill -f idle_holder.py
  cp "$state"/*.log "$state/scrapes.txt" "$work/" 2>/dev/null
  $py - "$state/watch.sqlite" <<'EOF'
import sqlite3, sys
sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")
EOF
  cp "$state/watch.sqlite" "$work/"
  ;;
esac

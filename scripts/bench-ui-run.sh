#!/usr/bin/env bash
# scripts/bench-ui-run.sh open|open20|closed FLOW — one run of FLOW on a new state file
# with flow ui serving that state file; with "open", a client follows the run's events
# stream all along, as an open page does (the server then asks the running process
# for the run twice a second); with "open20", twenty clients do, as twenty tabs (each
# tab's WebSocket is served by the same loop as an events stream). farm-bench times a
# pair of these (scripts/bench-ui.sh).
set -euo pipefail
mode=$1 flow=$2
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
"$root/bin/flow" ui --state "$dir/state.db" --listen 127.0.0.1:0 >"$dir/ui.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'http://' "$dir/ui.log" && break; sleep 0.05; done
addr=$(grep -o 'http://[0-9.:]*' "$dir/ui.log")
clients=0
case $mode in open) clients=1 ;; open20) clients=20 ;; esac
for _ in $(seq "$clients"); do
  curl -sN "$addr/api/events" >/dev/null &
  pids+=($!)
done
"$root/bin/flow" run "$flow" --state "$dir/state.db" --parallelism 8 >/dev/null

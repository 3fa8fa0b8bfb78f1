#!/usr/bin/env bash
# scripts/bench-jobs.sh — what a step costs as a Kubernetes Job (k8s_job) against the
# same command run by lxd_exec inside the member, on the lab make demo built: 30 steps
# across the three members, 10 at a time; create to completion per step (p50, p95,
# from the run's checkpoints) and the run's wall time; then one Job alone.
# docs/performance.md quotes it.
#
#   make demo && bash scripts/bench-jobs.sh      # BENCH_REPS=3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-3}
CONFIG=${LAB_CONFIG:-$PWD/.lab/k8s-lab}
FLOW=$PWD/bin/flow
[ -f "$CONFIG/member1.config" ] || { echo "no lab in $CONFIG: run make demo first" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
go build -o "$FLOW" ./cmd/flow

# steps STATE: p50 and p95 of the instances' start-to-finish seconds.
steps() {
  "$FLOW" status --json --state "$1" | python3 -c '
import json, sys
from datetime import datetime
def t(s): return datetime.fromisoformat(s[:26].rstrip("Z"))
d = sorted((t(x["finished_at"]) - t(x["started_at"])).total_seconds() for x in json.load(sys.stdin)["tasks"] if x["status"] == "succeeded")
def pct(p): return d[min(len(d) - 1, int(round(p / 100 * (len(d) - 1))))]
print(f"{len(d):3d} steps  p50 {pct(50):6.2f} s  p95 {pct(95):6.2f} s", end="")'
}

run() { # run KIND COUNT REP
  local state="$WORK/$1-$2-$3.db" t0 t1
  t0=$(date +%s.%N)
  "$FLOW" run bench/jobs/jobs.hcl --parallelism 10 --state "$state" --var config_dir="$CONFIG" \
    --var kind="$1" --var count="$2" --var run="r$3-$RANDOM" >"$WORK/out.log" 2>&1 || { cat "$WORK/out.log"; exit 1; }
  t1=$(date +%s.%N)
  printf '%-5s x%-3s rep %s: ' "$1" "$2" "$3"
  steps "$state"
  printf '  wall %6.2f s\n' "$(echo "$t1 $t0" | awk '{print $1 - $2}')"
  [ "$1" = exec ] || "$FLOW" destroy --auto-approve --state "$state" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  run exec 30 "$rep"
  run job 30 "$rep"
  run job 1 "$rep"
done

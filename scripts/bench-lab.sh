#!/usr/bin/env bash
# scripts/bench-lab.sh — wall time of the local lab (flows/local-lab.hcl) against the
# real LXD daemon: a cold run with --parallelism 1 and with the default (10), a second
# `flow run` of the finished lab (every LXD task finds its object and reports "already
# present"), and `flow resume` of a lab run killed while its last task ran (every
# instance that succeeded is skipped from its checkpoint; the mirror finds its images).
# Each cold run starts from a lab removed by flow destroy (start with no local lab up:
# make demo-busybox-teardown).
#
#   bash scripts/bench-lab.sh             # BENCH_REPS=3 by default; results in docs/performance.md
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-3}
FLOW=$PWD/bin/flow
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
go build -o "$FLOW" ./cmd/flow
bash scripts/lab-setup.sh >/dev/null

destroy() { "$FLOW" destroy --state "$1" --auto-approve >/dev/null; }
secs() { date +%s.%N; }
timed() { # timed LABEL CMD...: prints LABEL and the wall seconds of CMD
  local t0 t1; t0=$(secs); "${@:2}" >"$WORK/out.log" 2>&1 || { cat "$WORK/out.log"; exit 1; }; t1=$(secs)
  printf '%-34s %7.2f s\n' "$1" "$(echo "$t1 $t0" | awk '{print $1 - $2}')"
}
# status --json prints one "status" line per task after its "address" line.
succeeded() { "$FLOW" status --json --state "$1" 2>/dev/null | sed 1,5d | grep -c '"status": "succeeded"' || true; }
last_running() { "$FLOW" status --json --state "$1" 2>/dev/null |
  grep -A1 '"address": "image_mirror.karmada"' | grep -q '"status": "running"' && echo True || echo False; }
total=$("$FLOW" plan flows/local-lab.hcl --state "$WORK/plan.db" 2>/dev/null | grep -c '^  run' || true)

for rep in $(seq "$REPS"); do
  echo "# repetition $rep"
  timed "cold, --parallelism 1" "$FLOW" run flows/local-lab.hcl --new --parallelism 1 --state "$WORK/p1.db"
  timed "flow destroy of the finished lab" destroy "$WORK/p1.db"
  timed "cold, default parallelism (10)" "$FLOW" run flows/local-lab.hcl --new --state "$WORK/p10.db"
  timed "run again on the finished lab" "$FLOW" run flows/local-lab.hcl --state "$WORK/p10.db"
  destroy "$WORK/p10.db"
  # A run killed while its last task (the mirror) runs, then resumed.
  "$FLOW" run flows/local-lab.hcl --new --state "$WORK/kill.db" >/dev/null 2>&1 &
  pid=$!
  until [ "$(last_running "$WORK/kill.db")" = True ] || ! kill -0 $pid 2>/dev/null; do sleep 0.02; done
  if kill -9 $pid 2>/dev/null; then
    wait $pid 2>/dev/null || true
    timed "resume, $(succeeded "$WORK/kill.db") of $total skipped" "$FLOW" resume --state "$WORK/kill.db"
  else
    echo "resume: the run finished before the mirror was seen running; not measured"
  fi
  destroy "$WORK/kill.db"
done

#!/usr/bin/env bash
# scripts/bench-ui.sh — does an open flow ui page slow a run down? farm-bench pairs a
# run with flow ui serving its state file and a client on the events stream (A)
# against the same with flow ui serving and no page open (B), on two workloads:
#   W1000   1,000 instances of `sleep 0.02`, 8 at a time (some 3 s)
#   W10000  10,000 instances of `true`, 8 at a time (some 8 s; each read of the run
#           then takes long enough that the stream reads less often, see ui.pause)
# and W1000 with twenty clients (open20: twenty tabs' streams) against none.
# Figures in docs/performance.md ("flow ui").
set -euo pipefail
cd "$(dirname "$0")/.."
work=bench/work/ui
mkdir -p "$work"
cat >"$work/w1000.hcl" <<'HCL'
task "exec" "t" {
  for_each = toset([for i in range(1000) : tostring(i)])
  command  = ["sleep", "0.02"]
}
HCL
cat >"$work/w10000.hcl" <<'HCL'
task "exec" "t" {
  for_each = toset(flatten([for a in range(100) : [for b in range(100) : "${a}-${b}"]]))
  command  = ["true"]
}
HCL
for w in w1000:9 w10000:5; do
  name=${w%%:*} reps=${w##*:}
  echo "== $name"
  farm-bench -n "${BENCH_REPS:-$reps}" --timeout 900 --vs "bash scripts/bench-ui-run.sh closed $work/$name.hcl" -- \
    bash scripts/bench-ui-run.sh open "$work/$name.hcl"
done
echo "== w1000, twenty tabs"
farm-bench -n "${BENCH_REPS:-9}" --timeout 900 --vs "bash scripts/bench-ui-run.sh closed $work/w1000.hcl" -- \
  bash scripts/bench-ui-run.sh open20 "$work/w1000.hcl"

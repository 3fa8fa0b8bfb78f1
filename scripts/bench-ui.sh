#!/usr/bin/env bash
# scripts/bench-ui.sh — does an open flow ui page slow a run down? farm-bench pairs
# a run of 1,000 instances of `sleep 0.02` (8 at a time, some 3 s) with flow ui serving its state file and a client on
# the events stream (A) against the same with flow ui serving and no page open (B).
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
farm-bench -n "${BENCH_REPS:-9}" --timeout 600 --vs "bash scripts/bench-ui-run.sh closed $work/w1000.hcl" -- \
  bash scripts/bench-ui-run.sh open "$work/w1000.hcl"

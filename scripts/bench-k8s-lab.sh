#!/usr/bin/env bash
# scripts/bench-k8s-lab.sh — the Kubernetes lab (flows/k8s-lab) against the real LXD daemon:
# a cold run (start with no lab up: make demo-teardown) with every build cache warm, the time from each member's
# launch to its node Ready and to its web pods Ready, karmadactl init alone and the host
# cluster's launch to nginx through Karmada (read from the run's checkpoints), a
# second `flow run` of the finished lab, the lab's memory and CPU at rest
# (scripts/lab-usage.sh), and flow destroy of it. docs/performance.md quotes it.
#
#   bash scripts/bench-k8s-lab.sh          # BENCH_REPS=1 by default; IDLE_SECS=60
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${BENCH_REPS:-1}
IDLE=${IDLE_SECS:-60}
FLOW=$PWD/bin/flow
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
go build -o "$FLOW" ./cmd/flow
bash scripts/lab-setup.sh >/dev/null

secs() { date +%s.%N; }
timed() { # timed LABEL CMD...: prints LABEL and the wall seconds of CMD
  local t0 t1; t0=$(secs); "${@:2}" >"$WORK/out.log" 2>&1 || { cat "$WORK/out.log"; exit 1; }; t1=$(secs)
  printf '%-40s %8.2f s\n' "$1" "$(echo "$t1 $t0" | awk '{print $1 - $2}')"
}
# milestones STATE: per member, launch -> node Ready and launch -> web pods Ready.
milestones() {
  "$FLOW" status --json --state "$1" | python3 -c '
import json, sys
from datetime import datetime
def t(s): return datetime.fromisoformat(s[:26].rstrip("Z"))
tasks = {x["address"]: x for x in json.load(sys.stdin)["tasks"]}
for m in ("member1", "member2", "member3"):
    launch = t(tasks[f"lxd_launch.member[\"{m}\"]"]["started_at"])
    node = t(tasks[f"wait_ready.member_node[\"{m}\"]"]["finished_at"])
    pods = t(tasks[f"wait_ready.web[\"{m}\"]"]["finished_at"])
    print(f"{m}: launch -> node Ready {(node - launch).total_seconds():6.1f} s, -> web pods Ready {(pods - launch).total_seconds():6.1f} s")
init = tasks["module.karmada.karmadactl_init.karmada"]
init_secs = (t(init["finished_at"]) - t(init["started_at"])).total_seconds()
print(f"karmadactl init alone: {init_secs:6.1f} s")
launch = t(tasks["lxd_launch.member[\"karmada-host\"]"]["started_at"])
done = max(t(x["finished_at"]) for a, x in tasks.items() if a.startswith("module.karmada.wait_ready.nginx"))
phase = (done - launch).total_seconds()
print(f"host cluster launch -> nginx through Karmada in every member: {phase:6.1f} s")
'
}

for rep in $(seq "$REPS"); do
  echo "# repetition $rep"
  timed "cold (caches warm, images imported)" "$FLOW" run flows/k8s-lab --new --state "$WORK/cold.db"
  milestones "$WORK/cold.db"
  timed "run again on the finished lab" "$FLOW" run flows/k8s-lab --new --state "$WORK/cold.db"
  echo "# at rest, ${IDLE}s after the run"
  bash scripts/lab-usage.sh "$IDLE" karmada-host member1 member2 member3 lab-registry lab-upstream
  timed "flow destroy of the finished lab" "$FLOW" destroy --state "$WORK/cold.db" --auto-approve
done

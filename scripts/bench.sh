#!/usr/bin/env bash
# scripts/bench.sh — wall time of flow against GNU make, go-task and Terraform
# (terraform_data + local-exec) on the same workloads, flow's start-up against
# make's, the time and peak memory of planning 10,000 and 100,000 instances, and
# the cost of one durable checkpoint. One run prints a table and writes the raw numbers.
#
#   bash scripts/bench.sh                 # or: make bench (Go benchmarks first)
#   BENCH_REPS=9 BENCH_REPS_W3=5 bash scripts/bench.sh
#
# Workloads (bench/work/, regenerated every run; see docs/performance.md):
#   W0  one `true`                      the fixed cost of one run (start, state file, exit)
#   W1  200 independent `true`          flow --parallelism 8, make -j8, task --concurrency 8
#   W2  2,000 independent `true`        same
#   W3  20,000 independent `true`       flow only: its time against W2's (target <= 11x)
#   W4  lab-shaped DAG of `sleep 0.2`   1 root, 3 members x 5 chained steps, 1 join (1.4 s floor)
#   W5  100 x `sleep 0.1`               flow --parallelism 10, make -j10, task --concurrency 10 (1.0 s floor)
#   PLAN `flow plan` of 10,000 instances (5,000 a, 5,000 b reading its a): time and peak RSS
#   PLAN100K the same with 100,000 instances (target: under 5 s and 1 GiB)
#   HELP `flow --help` against `make --help` (and go-task's, Terraform's)
#   STATUS `flow status` on W0's finished state against `make -q` on an up-to-date
#       target (go-task --status, terraform show): reading what is done, running nothing
# Terraform runs a workload only while its repetitions stay under a minute.
# Then one timeline run each of W4 and W3 (bench/linerate), and the state's commit
# benchmark (go test -bench Commit ./engine/state/) for the cost of an fsync.
# Each repetition runs flow, make, task (and terraform) in turn (alternating, so load from other
# users of the machine falls on all three alike) after waiting for a quiet moment;
# flow gets a new state file each time. Rows record the CPU others used meanwhile.
#
# Every tool starts a real process per task: flow's exec task with command ["true"],
# make's direct exec of `true` (no shell for a simple command), and go-task with
# /bin/true, because go-task interprets commands with mvdan/sh, where plain `true`
# is a builtin that starts no process at all.
#
# Environment: BENCH_REPS (default 5), BENCH_REPS_W3 (3), BENCH_OUT (bench/results/latest),
# BENCH_QUIET_WAIT (most seconds to wait for a quiet moment, 30), BENCH_SKIP_FSYNC=1 to skip the checkpoint benchmark, BENCH_SKIP_TF=1 to leave Terraform out.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${BENCH_REPS:-5}
REPS_W3=${BENCH_REPS_W3:-3}
OUT=${BENCH_OUT:-$ROOT/bench/results/latest}
WORK=$ROOT/bench/work
# Peers are built once from the Go module proxy into the cache scripts/k8s-bins.sh uses.
CACHE=${FLOW_BIN_CACHE:-$HOME/.cache/flow/bin}
TASK_VERSION=v3.53.1 # pinned: v3.54.0 is reported not to build with this toolchain
TASK=$CACHE/task-$TASK_VERSION/task
TF_VERSION=v1.5.7 # the last release under the MPL; it builds here
TF=$CACHE/terraform-$TF_VERSION/terraform
TF_LIMIT=60 # seconds: Terraform's repetitions of a workload stop once one takes longer
# Terraform must not phone home (version checkpoint) or ask questions.
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
FLOW=$ROOT/bin/flow
GO=${GO:-go}
export GOFLAGS=${GOFLAGS:--buildvcs=false}

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# ---- tools -------------------------------------------------------------------

command -v make >/dev/null || die "GNU make is missing (Debian package make)"
make build >/dev/null
[ -x "$FLOW" ] || die "make build did not produce $FLOW"
if [ ! -x /usr/bin/time ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing GNU time for peak RSS"
    bash "$(dirname "$0")/apt-install.sh" time
  fi
  [ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"
fi
if [ ! -x "$TASK" ]; then
  log "building go-task $TASK_VERSION into $(dirname "$TASK") (once; takes minutes on 2 cores)"
  mkdir -p "$(dirname "$TASK")"
  GOBIN=$(dirname "$TASK") "$GO" install "github.com/go-task/task/v3/cmd/task@$TASK_VERSION"
fi
[[ "$("$TASK" --version)" == *"${TASK_VERSION#v}"* ]] || die "$TASK is not go-task $TASK_VERSION"
if [ "${BENCH_SKIP_TF:-}" != 1 ] && [ ! -x "$TF" ]; then
  log "building Terraform $TF_VERSION into $(dirname "$TF") (once; takes minutes on 2 cores)"
  mkdir -p "$(dirname "$TF")"
  GOBIN=$(dirname "$TF") GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" install "github.com/hashicorp/terraform@$TF_VERSION"
fi
if [ "${BENCH_SKIP_TF:-}" != 1 ]; then
  # Not `| grep -q`: grep exits at the first match, and under pipefail Terraform's
  # SIGPIPE would fail the check at random.
  [[ "$("$TF" version)" == *"Terraform $TF_VERSION"* ]] || die "$TF is not Terraform $TF_VERSION"
fi

# ---- workloads ---------------------------------------------------------------

rm -rf "$WORK"
mkdir -p "$WORK/state" "$OUT"

# keys N: an HCL object of N keys "00000".."N-1" for for_each. range() yields at
# most 1024 values, so keys come in blocks of 1000. An object rather than toset([...]),
# whose cost depends on go-cty's tuple-to-set conversion (measured apart under PLAN).
keys() {
  local n=$1
  if [ "$n" -le 1000 ]; then
    printf '{ for i in range(%d) : format("%%05d", i) => i }' "$n"
  else
    printf '{ for k in flatten([for a in range(%d) : [for b in range(1000) : format("%%05d", a * 1000 + b)]]) : k => k }' $((n / 1000))
  fi
}

# independent NAME N: N independent tasks that each run `true`.
independent() {
  local name=$1 n=$2 d=$WORK/$1 i
  mkdir -p "$d"
  cat >"$d/flow.hcl" <<EOF
# $name: $n independent tasks, each running true.
task "exec" "t" {
  for_each = $(keys "$n")
  command  = ["true"]
}
EOF
  {
    printf '# %s: %d independent targets, each running true.\n.PHONY: all\nall:' "$name" "$n"
    for ((i = 0; i < n; i++)); do printf ' t%05d' "$i"; done
    printf '\n'
    for ((i = 0; i < n; i++)); do printf 't%05d:\n\t@true\n' "$i"; done
  } >"$d/Makefile"
  {
    printf '# %s: %d independent tasks, each running /bin/true (plain true is a builtin of\n' "$name" "$n"
    printf "# go-task's shell interpreter and would start no process).\nversion: '3'\ntasks:\n  default:\n    deps:\n"
    for ((i = 0; i < n; i++)); do printf '      - t%05d\n' "$i"; done
    for ((i = 0; i < n; i++)); do printf '  t%05d:\n    cmds: [/bin/true]\n' "$i"; done
  } >"$d/Taskfile.yml"
  tf_exec "$d" "$name: $n independent resources, each running true" "$n" true
}

# tf_exec DIR COMMENT COUNT COMMAND: a Terraform configuration of COUNT terraform_data
# resources whose local-exec provisioner runs COMMAND (through /bin/sh -c, as
# local-exec always does; sh runs `true` and `sleep` itself, one process per task).
tf_exec() {
  mkdir -p "$1/tf"
  cat >"$1/tf/main.tf" <<EOF
# $2.
resource "terraform_data" "t" {
  count = $3
  provisioner "local-exec" {
    command = "$4"
  }
}
EOF
}

independent W0 1
independent W1 200
independent W2 2000
independent W3 20000
rm -rf "$WORK/W3/Makefile" "$WORK/W3/Taskfile.yml" "$WORK/W3/tf" # flow only

# W4: the shape of the lab (flows/demo.hcl): a host step, 5 chained steps per member
# for 3 members, and a join; every step sleeps 0.2 s, so the critical path is 7 x 0.2 s.
mkdir -p "$WORK/W4"
{
  cat <<'EOF'
# W4: lab-shaped DAG. Critical path root -> s1..s5 of one member -> join = 7 x 0.2 s.
locals {
  members = { m1 = "m1", m2 = "m2", m3 = "m3" }
}

task "exec" "root" {
  command = ["sleep", "0.2"]
}

task "exec" "s1" {
  for_each   = local.members
  depends_on = [exec.root]
  command    = ["sleep", "0.2"]
}
EOF
  for s in 2 3 4 5; do
    cat <<EOF

task "exec" "s$s" {
  for_each   = local.members
  depends_on = [exec.s$((s - 1))[each.key]]
  command    = ["sleep", "0.2"]
}
EOF
  done
  cat <<'EOF'

task "exec" "join" {
  depends_on = [exec.s5]
  command    = ["sleep", "0.2"]
}
EOF
} >"$WORK/W4/flow.hcl"
{
  printf '# W4: lab-shaped DAG, every step sleeps 0.2 s; critical path 1.4 s.\n.PHONY: join root'
  for m in m1 m2 m3; do for s in 1 2 3 4 5; do printf ' s%d-%s' "$s" "$m"; done; done
  printf '\njoin: s5-m1 s5-m2 s5-m3\n\tsleep 0.2\nroot:\n\tsleep 0.2\n'
  for m in m1 m2 m3; do
    printf 's1-%s: root\n\tsleep 0.2\n' "$m"
    for s in 2 3 4 5; do printf 's%d-%s: s%d-%s\n\tsleep 0.2\n' "$s" "$m" $((s - 1)) "$m"; done
  done
} >"$WORK/W4/Makefile"
{
  printf "# W4: lab-shaped DAG, every step sleeps 0.2 s; critical path 1.4 s.\n"
  printf "# run: once, or root would run once per member that depends on it.\nversion: '3'\nrun: once\ntasks:\n"
  printf '  default:\n    deps: [s5-m1, s5-m2, s5-m3]\n    cmds: [sleep 0.2]\n'
  printf '  root:\n    cmds: [sleep 0.2]\n'
  for m in m1 m2 m3; do
    printf '  s1-%s:\n    deps: [root]\n    cmds: [sleep 0.2]\n' "$m"
    for s in 2 3 4 5; do printf '  s%d-%s:\n    deps: [s%d-%s]\n    cmds: [sleep 0.2]\n' "$s" "$m" $((s - 1)) "$m"; done
  done
} >"$WORK/W4/Taskfile.yml"
mkdir -p "$WORK/W4/tf"
{
  printf '# W4: lab-shaped DAG; each step of a member reads its previous step (per-instance edges).\n'
  printf 'locals {\n  members = toset(["m1", "m2", "m3"])\n}\n\n'
  printf 'resource "terraform_data" "root" {\n  provisioner "local-exec" {\n    command = "sleep 0.2"\n  }\n}\n'
  printf '\nresource "terraform_data" "s1" {\n  for_each = local.members\n  input    = terraform_data.root.id\n  provisioner "local-exec" {\n    command = "sleep 0.2"\n  }\n}\n'
  for s in 2 3 4 5; do
    printf '\nresource "terraform_data" "s%d" {\n  for_each = local.members\n  input    = terraform_data.s%d[each.key].id\n  provisioner "local-exec" {\n    command = "sleep 0.2"\n  }\n}\n' "$s" $((s - 1))
  done
  printf '\nresource "terraform_data" "join" {\n  depends_on = [terraform_data.s5]\n  provisioner "local-exec" {\n    command = "sleep 0.2"\n  }\n}\n'
} >"$WORK/W4/tf/main.tf"

# W5: 100 x sleep 0.1 at parallelism 10: ten waves, 1.0 s floor.
mkdir -p "$WORK/W5"
cat >"$WORK/W5/flow.hcl" <<EOF
# W5: 100 independent tasks sleeping 0.1 s; at parallelism 10 the floor is 1.0 s.
task "exec" "t" {
  for_each = $(keys 100)
  command  = ["sleep", "0.1"]
}
EOF
{
  printf '# W5: 100 independent targets sleeping 0.1 s.\n.PHONY: all\nall:'
  for ((i = 0; i < 100; i++)); do printf ' t%03d' "$i"; done
  printf '\n'
  for ((i = 0; i < 100; i++)); do printf 't%03d:\n\tsleep 0.1\n' "$i"; done
} >"$WORK/W5/Makefile"
{
  printf "# W5: 100 independent tasks sleeping 0.1 s.\nversion: '3'\ntasks:\n  default:\n    deps:\n"
  for ((i = 0; i < 100; i++)); do printf '      - t%03d\n' "$i"; done
  for ((i = 0; i < 100; i++)); do printf '  t%03d:\n    cmds: [sleep 0.1]\n' "$i"; done
} >"$WORK/W5/Taskfile.yml"
tf_exec "$WORK/W5" "W5: 100 resources sleeping 0.1 s" 100 "sleep 0.1"

# PLAN: 10,000 instances, 5,000 of task a and 5,000 of task b, each b reading its
# own a's stdout (per-instance edges); once with keys as an object, once via toset().
mkdir -p "$WORK/PLAN"
plan_flow() {
  cat <<EOF
# PLAN: 10,000 instances: 5,000 of exec.a, 5,000 of exec.b each reading its own a.
locals {
  keys = $1
}

task "exec" "a" {
  for_each = local.keys
  command  = ["echo", each.key]
}

task "exec" "b" {
  for_each = local.keys
  command  = ["echo", "after", exec.a[each.key].stdout]
}
EOF
}
plan_flow "$(keys 5000)" >"$WORK/PLAN/flow.hcl"
plan_flow 'toset(flatten([for a in range(5) : [for b in range(1000) : format("%05d", a * 1000 + b)]]))' >"$WORK/PLAN/flow-toset.hcl"
plan_flow "$(keys 50000)" >"$WORK/PLAN/flow-100k.hcl"

# STATUS: what each tool reads to say what is done, after W0 ran: flow status on
# W0's state, make -q on a target that is up to date, go-task --status on a task
# whose status check passes, terraform show on W0's state.
mkdir -p "$WORK/STATUS"
printf '# STATUS: one file target, up to date once made.\ndone:\n\ttouch done\n' >"$WORK/STATUS/Makefile"
printf "# STATUS: one task that is up to date.\nversion: '3'\ntasks:\n  default:\n    cmds: [/bin/true]\n    status: [test -f Makefile]\n" >"$WORK/STATUS/Taskfile.yml"

# terraform init once per configuration: terraform_data and local-exec are built in,
# so nothing is downloaded.
TF_DIRS=()
if [ "${BENCH_SKIP_TF:-}" != 1 ]; then
  for d in "$WORK"/W*/tf; do
    (cd "$d" && "$TF" init -input=false -no-color >/dev/null) || die "terraform init in $d failed"
    TF_DIRS+=("$d")
  done
fi

# ---- measuring ---------------------------------------------------------------

RAW=$OUT/raw.tsv
{
  printf '# flow benchmark, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '# nproc=%s cpu=%s\n' "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  printf '# %s; %s; go-task %s; %s; kernel %s\n' "$("$GO" version)" "$(make --version | head -1)" "$("$TASK" --version)" \
    "$([ "${BENCH_SKIP_TF:-}" = 1 ] && echo 'no Terraform' || "$TF" version | head -1)" "$(uname -r)"
  printf '# flow commit %s%s\n' "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$([ -n "$(GIT_OPTIONAL_LOCKS=0 git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' with uncommitted changes')"
  printf '# load average at start: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf '# others_cpu_s: CPU seconds the rest of the machine used during the row (from /proc/stat)\n'
  printf 'workload\ttool\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\tothers_cpu_s\n'
} >"$RAW"

# The machine is shared: others' builds and tests take CPU at random moments. Each
# repetition waits (up to 30 s) for a second in which the machine is at most 10%
# busy, and every row records the CPU seconds the rest of the machine used while it
# ran (this includes kernel work done on a tool's behalf outside its processes, such
# as journal commits after flow's fsyncs).
HZ=$(getconf CLK_TCK)
NCPU=$(nproc)
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; } # user nice system irq softirq steal
wait_quiet() {
  local i b0 b1
  for ((i = 0; i < ${BENCH_QUIET_WAIT:-30}; i++)); do
    b0=$(busy_jiffies)
    sleep 1
    b1=$(busy_jiffies)
    awk -v d=$((b1 - b0)) -v hz="$HZ" -v n="$NCPU" 'BEGIN { exit !(d / hz / n <= 0.10) }' && return 0
  done
  log "the machine stayed busy for ${BENCH_QUIET_WAIT:-30} s; measuring anyway"
}

# run WORKLOAD TOOL REP DIR CMD...: time CMD (wall from $EPOCHREALTIME; CPU and peak
# RSS of the whole process tree's largest member from GNU time) and append a row.
run() {
  local w=$1 tool=$2 rep=$3 dir=$4
  shift 4
  local tf=$WORK/time.out t0 t1 b0 b1 rc=0
  b0=$(busy_jiffies)
  t0=$EPOCHREALTIME
  (cd "$dir" && /usr/bin/time -o "$tf" -f '%U %S %M' "$@" >/dev/null 2>"$WORK/stderr") || rc=$?
  t1=$EPOCHREALTIME
  b1=$(busy_jiffies)
  if [ "$rc" != 0 ]; then
    cat "$WORK/stderr" >&2
    die "$w $tool rep $rep: exit $rc: $*"
  fi
  local u s m wall others
  read -r u s m <"$tf"
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
  others=$(awk -v d=$((b1 - b0)) -v hz="$HZ" -v u="$u" -v s="$s" 'BEGIN { o = d / hz - u - s; printf "%.2f", o < 0 ? 0 : o }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$tool" "$rep" "$wall" "$u" "$s" "$m" "$others" >>"$RAW"
  printf '  %-4s %-5s rep %d: %7.3f s (others used %s CPU s)\n' "$w" "$tool" "$rep" "$wall" "$others" >&2
}

flow_run() { # W REP PARALLELISM
  local st=$WORK/state/$1-$2.db
  rm -f "$st"
  run "$1" flow "$2" "$WORK/$1" "$FLOW" --state "$st" run flow.hcl --parallelism "$3"
  rm -f "$st"
}

# tf_run W REP PARALLELISM: terraform apply of W's configuration from an empty
# state, unless W has none or an earlier repetition took over TF_LIMIT seconds.
declare -A TF_SLOW=()
tf_run() {
  local d=$WORK/$1/tf last
  [ "${#TF_DIRS[@]}" -gt 0 ] && [ -f "$d/main.tf" ] && [ -z "${TF_SLOW[$1]:-}" ] || return 0
  rm -f "$d/terraform.tfstate" "$d/terraform.tfstate.backup"
  run "$1" terraform "$2" "$d" "$TF" apply -auto-approve -input=false -no-color -parallelism="$3"
  rm -f "$d/terraform.tfstate" "$d/terraform.tfstate.backup"
  last=$(awk -F'\t' -v w="$1" '$1 == w && $2 == "terraform" { x = $4 } END { print x }' "$RAW")
  if awk -v t="$last" -v l="$TF_LIMIT" 'BEGIN { exit !(t > l) }'; then
    log "$1: terraform took ${last} s, over ${TF_LIMIT} s: no more repetitions of it"
    TF_SLOW[$1]=1
  fi
}

# three WORKLOAD PARALLELISM [W3REPS]: flow, make, task alternating, REPS times;
# with W3REPS, repetition i (i <= W3REPS) also runs W3 (flow only) right after, so
# W3 and W2 are measured under the same load from other users of the machine.
three() {
  local w=$1 p=$2 w3=${3:-0} rep
  log "$w: flow --parallelism $p, make -j$p, task --concurrency $p; $REPS repetitions${3:+, W3 after each of the first $w3}"
  for ((rep = 1; rep <= REPS; rep++)); do
    wait_quiet
    flow_run "$w" "$rep" "$p"
    run "$w" make "$rep" "$WORK/$w" make -s -j"$p" -f Makefile
    run "$w" task "$rep" "$WORK/$w" "$TASK" --silent --concurrency "$p" --taskfile Taskfile.yml default
    tf_run "$w" "$rep" "$p"
    if ((rep <= w3)); then
      wait_quiet
      flow_run W3 "$rep" 8
    fi
  done
}

# Start-up: --help, and reading a finished state (W0 runs once more for it).
rm -f "$WORK/state/status.db"
(cd "$WORK/W0" && "$FLOW" --state "$WORK/state/status.db" run flow.hcl >/dev/null)
(cd "$WORK/STATUS" && make -s >/dev/null)
if [ "${#TF_DIRS[@]}" -gt 0 ]; then
  (cd "$WORK/W0/tf" && rm -f terraform.tfstate && "$TF" apply -auto-approve -input=false -no-color >/dev/null &&
    mv terraform.tfstate "$WORK/STATUS/w0.tfstate")
fi
log "HELP and STATUS: start-up of each tool; $REPS repetitions of 5 runs each"
for ((rep = 1; rep <= REPS; rep++)); do
  wait_quiet
  for ((i = 1; i <= 5; i++)); do
    r=$(((rep - 1) * 5 + i))
    run HELP flow "$r" "$WORK/STATUS" "$FLOW" --help
    run HELP make "$r" "$WORK/STATUS" make --help
    run HELP task "$r" "$WORK/STATUS" "$TASK" --help
    if [ "${#TF_DIRS[@]}" -gt 0 ]; then run HELP terraform "$r" "$WORK/STATUS" "$TF" -help; fi
    run STATUS flow "$r" "$WORK/STATUS" "$FLOW" --state "$WORK/state/status.db" status
    run STATUS make "$r" "$WORK/STATUS" make -q
    run STATUS task "$r" "$WORK/STATUS" "$TASK" --status default
    if [ "${#TF_DIRS[@]}" -gt 0 ]; then run STATUS terraform "$r" "$WORK/STATUS" "$TF" show -no-color w0.tfstate; fi
  done
done

three W0 8
three W1 8
three W2 8 "$REPS_W3"
three W4 8
three W5 10

# One more W4 run, every line of its output stamped with the milliseconds since
# start: how long each step took, and how long each dependent waited after its
# dependency finished (the checkpoint is made durable in between).
log "W4 timeline: when each step started and finished"
"$GO" build -o "$WORK/linerate" ./bench/linerate
W4LINES=$OUT/w4-timeline.txt
rm -f "$WORK/state/w4.db"
wait_quiet
b0=$(busy_jiffies)
launch=$EPOCHREALTIME
(cd "$WORK/W4" && "$FLOW" --state "$WORK/state/w4.db" run flow.hcl --parallelism 8 | "$WORK/linerate" -lines -match ': ' -start "$launch") >"$W4LINES"
w4busy=$(awk -v d=$(($(busy_jiffies) - b0)) -v hz="$HZ" 'BEGIN { printf "%.2f", d / hz }')
rm -f "$WORK/state/w4.db"
# w4gaps: "median-gap-ms max-gap-ms mean-step-ms first-start-ms" from the timeline.
w4gaps() {
  awk -F'\t' '
    function name(l, what) { sub(what ".*", "", l); return l }
    $2 ~ /: succeeded in / { a = name($2, ": succeeded"); done[a] = $1; last = $1
      d = $2; sub(/.*succeeded in /, "", d); sub(/ms$/, "", d); steps += d; nsteps++ }
    $2 ~ /: started$/ { a = name($2, ": started")
      if (first == "") first = $1
      if (a == "exec.root") next
      if (a == "exec.join") dep = last
      else { k = substr(a, 7, 1); m = substr(a, 10, 2)
        dep = (k == 1) ? done["exec.root"] : done["exec.s" (k - 1) "[\"" m "\"]"] }
      gaps[++n] = $1 - dep }
    END { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (gaps[j] < gaps[i]) { t = gaps[i]; gaps[i] = gaps[j]; gaps[j] = t }
      printf "%.1f %.1f %.1f %.1f\n", (n % 2) ? gaps[(n + 1) / 2] : (gaps[n / 2] + gaps[n / 2 + 1]) / 2, gaps[n], steps / nsteps, first }' "$W4LINES"
}

# One more W3 run, its output piped into bench/linerate: seconds per 2,000 finished
# instances from start to end. Flat means per-instance cost does not grow with the run.
log "W3 timeline: seconds per 2,000 finished instances"
TIMELINE=$OUT/w3-timeline.tsv
rm -f "$WORK/state/timeline.db"
wait_quiet
b0=$(busy_jiffies)
launch=$EPOCHREALTIME
(cd "$WORK/W3" && "$FLOW" --state "$WORK/state/timeline.db" run flow.hcl --parallelism 8 | "$WORK/linerate" -match ': succeeded' -every 2000 -start "$launch") >"$TIMELINE"
w3busy=$(awk -v d=$(($(busy_jiffies) - b0)) -v hz="$HZ" 'BEGIN { printf "%.2f", d / hz }')
rm -f "$WORK/state/timeline.db"

log "PLAN: flow plan of 10,000 instances"
for ((rep = 1; rep <= REPS; rep++)); do
  wait_quiet
  run PLAN flow "$rep" "$WORK/PLAN" "$FLOW" --state "$WORK/state/none.db" plan flow.hcl
  run PLAN-toset flow "$rep" "$WORK/PLAN" "$FLOW" --state "$WORK/state/none.db" plan flow-toset.hcl
done
log "PLAN100K: flow plan of 100,000 instances"
for ((rep = 1; rep <= REPS_W3; rep++)); do
  wait_quiet
  run PLAN100K flow "$rep" "$WORK/PLAN" "$FLOW" --state "$WORK/state/none.db" plan flow-100k.hcl
done
printf '# load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW"

FSYNC=$OUT/commit-bench.txt
if [ "${BENCH_SKIP_FSYNC:-}" != 1 ]; then
  log "checkpoint cost: go test -bench Commit ./engine/state/ (one bbolt transaction + fsync per op)"
  "$GO" test -run '^$' -bench 'Commit' -benchtime 200x -count 3 ./engine/state/ >"$FSYNC" 2>&1 || { cat "$FSYNC" >&2; die "commit benchmark failed"; }
fi

# ---- report ------------------------------------------------------------------

# stat W TOOL FIELD: "median min n" of column FIELD (4 wall, 7 rss, 8 others' CPU).
stat() {
  awk -F'\t' -v w="$1" -v t="$2" -v f="$3" '$1 == w && $2 == t { print $f }' "$RAW" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) { print "NaN NaN 0"; exit }
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], NR }'
}
med() { stat "$1" "$2" "${3:-4}" | cut -d' ' -f1; }
calc() { awk "BEGIN { printf \"%.3f\", $* }"; }
yes_no() { awk "BEGIN { exit !($*) }" && echo met || echo MISSED; }
# also: the verdict of a secondary measure of the same target, in parentheses.
also() { awk "BEGIN { exit !($*) }" && echo "(met by this measure)" || echo "(missed by this measure)"; }

TABLE=$OUT/table.md
{
  echo "| workload | tool | n | median s | min s | median / make | others' CPU s, median (max) |"
  echo "| --- | --- | --: | --: | --: | --: | --: |"
  for w in HELP STATUS W0 W1 W2 W3 W4 W5; do
    for t in flow make task terraform; do
      read -r m mn n <<<"$(stat "$w" "$t" 4)"
      [ "$n" = 0 ] && continue
      mk=$(med "$w" make)
      ratio="–"
      [ "$mk" != NaN ] && ratio=$(calc "$m / $mk")
      read -r om _ _ <<<"$(stat "$w" "$t" 8)"
      omax=$(awk -F'\t' -v w="$w" -v t="$t" '$1 == w && $2 == t { if ($8 > x) x = $8 } END { printf "%.2f", x }' "$RAW")
      printf '| %s | %s | %d | %.3f | %.3f | %s | %.2f (%s) |\n' "$w" "$(case $t in task) echo go-task ;; terraform) echo Terraform ;; *) echo "$t" ;; esac)" "$n" "$m" "$mn" "$ratio" "$om" "$omax"
    done
  done
  echo
  echo "| flow plan | n | median s | min s | median peak RSS MB | max peak RSS MB | others' CPU s, median (max) |"
  echo "| --- | --: | --: | --: | --: | --: | --: |"
  for w in PLAN PLAN-toset PLAN100K; do
    read -r m mn n <<<"$(stat "$w" flow 4)"
    read -r r _ _ <<<"$(stat "$w" flow 7)"
    rmax=$(awk -F'\t' -v w="$w" '$1 == w { if ($7 > x) x = $7 } END { print x }' "$RAW")
    read -r om _ _ <<<"$(stat "$w" flow 8)"
    omax=$(awk -F'\t' -v w="$w" '$1 == w { if ($8 > x) x = $8 } END { printf "%.2f", x }' "$RAW")
    printf '| %s | %d | %.3f | %.3f | %.1f | %.1f | %.2f (%s) |\n' \
      "$(case $w in PLAN) echo '10,000 instances, keys as object' ;; PLAN-toset) echo '10,000 instances, keys via toset()' ;; *) echo '100,000 instances, keys as object' ;; esac)" "$n" "$m" "$mn" "$(calc "$r / 1024")" "$(calc "$rmax / 1024")" "$om" "$omax"
  done
} >"$TABLE"

w2f=$(med W2 flow) w2m=$(med W2 make) w3f=$(med W3 flow)
# paired WA TA WB TB: median over repetitions of wall(WA, TA) / wall(WB, TB) of the
# same repetition, which cancels load that other users put on the machine meanwhile.
paired() {
  awk -F'\t' -v wa="$1" -v ta="$2" -v wb="$3" -v tb="$4" '
    $1 == wa && $2 == ta { a[$3] = $4 } $1 == wb && $2 == tb { b[$3] = $4 }
    END { for (r in a) if (r in b) print a[r] / b[r] }' "$RAW" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# cpu W T: median user+sys seconds of the whole process tree.
cpu() {
  awk -F'\t' -v w="$1" -v t="$2" '$1 == w && $2 == t { print $5 + $6 }' "$RAW" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
w3pair=$(paired W3 flow W2 flow)
w2pair=$(paired W2 flow W2 make)
w4pair=$(awk -F'\t' '$1 == "W4" && $2 == "flow" { f[$3] = $4 } $1 == "W4" && $2 == "make" { m[$3] = $4 }
  END { for (r in f) if (r in m) print (f[r] - m[r]) * 1000 }' "$RAW" | sort -g |
  awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
w4f=$(med W4 flow) w4m=$(med W4 make) w5f=$(med W5 flow)
pt=$(med PLAN flow) prss=$(awk -F'\t' '$1 == "PLAN" { if ($7 > x) x = $7 } END { print x }' "$RAW")
pt100=$(med PLAN100K flow) prss100=$(awk -F'\t' '$1 == "PLAN100K" { if ($7 > x) x = $7 } END { print x }' "$RAW")
{
  echo
  echo "| target | measured | |"
  echo "| --- | --- | --- |"
  echo "| start-up: flow --help within 3x of make --help, paired | $(paired HELP flow HELP make)x | $(yes_no "$(paired HELP flow HELP make) <= 3") |"
  echo "| start-up: flow status (finished) within 3x of make -q, paired | $(paired STATUS flow STATUS make)x | $(yes_no "$(paired STATUS flow STATUS make) <= 3") |"
  echo "| start-up: one true (W0, new state) within 3x of make, paired | $(paired W0 flow W0 make)x | $(yes_no "$(paired W0 flow W0 make) <= 3") |"
  echo "| W2: 2,000 true at or below make -j8, paired (median of ratios) | ${w2pair}x | $(yes_no "$w2pair <= 1") |"
  echo "| W2 medians flow / make | $(calc "$w2f / $w2m")x | – |"
  echo "| W2 CPU seconds (user+sys, whole process tree), flow / make medians | $(cpu W2 flow) / $(cpu W2 make) = $(calc "$(cpu W2 flow) / $(cpu W2 make)")x | – |"
  echo "| W3: 20,000 within 10x of flow's 2,000 (medians) | $(calc "$w3f / $w2f")x | $(yes_no "$w3f <= 10 * $w2f") |"
  echo "| W3 / W2, paired by repetition (median of ratios) | ${w3pair}x | $(also "$w3pair <= 10") |"
  echo "| W4: flow within 30 ms of make, paired (median of differences) | +${w4pair} ms | $(yes_no "$w4pair <= 30") |"
  echo "| W4 medians: flow, make over the 1.4 s floor | +$(calc "($w4f - 1.4) * 1000") ms, +$(calc "($w4m - 1.4) * 1000") ms | – |"
  echo "| W5: 1.0 s floor (no target; excess shown) | +$(calc "($w5f - 1.0) * 1000") ms | – |"
  echo "| plan 10,000 instances under 1 s | $(calc "$pt") s | $(yes_no "$pt < 1") |"
  echo "| plan 10,000 instances under 200 MB resident (max of runs) | $(calc "$prss / 1024") MB | $(yes_no "$prss < 200 * 1024") |"
  echo "| plan 100,000 instances under 5 s (median) | $(calc "$pt100") s | $(yes_no "$pt100 < 5") |"
  echo "| plan 100,000 instances under 1 GiB resident (max of runs) | $(calc "$prss100 / 1024") MB | $(yes_no "$prss100 < 1024 * 1024") |"
} >>"$TABLE"
read -r gapmed gapmax stepmean firststart <<<"$(w4gaps)"
{
  echo
  echo "W4 timeline (one extra run, ${W4LINES#"$ROOT"/}): first task started ${firststart} ms after launch;"
  echo "steps took ${stepmean} ms on average (sleep 0.2 plus process start and exit); a dependent"
  echo "started a median ${gapmed} ms (max ${gapmax} ms) after its dependency finished."
  echo "The whole machine used ${w4busy} CPU s during this run (flow and its tasks included)."
} >>"$TABLE"
{
  echo
  echo "W3 timeline (one extra run; the whole machine used ${w3busy} CPU s meanwhile, flow included):"
  echo "finished instances, seconds since launch, seconds for the last 2,000:"
  echo
  sed 's/^/    /' "$TIMELINE"
} >>"$TABLE"
if [ -s "$FSYNC" ]; then
  {
    echo
    echo "Checkpoint (one bbolt transaction with fsync), go test -bench Commit ./engine/state/:"
    echo
    grep '^BenchmarkCommit' "$FSYNC" | awk '{ printf "    %s  %s %s\n", $1, $3, $4 }'
  } >>"$TABLE"
fi

echo
cat "$TABLE"
echo
echo "raw numbers: ${RAW#"$ROOT"/}; table: ${TABLE#"$ROOT"/}"

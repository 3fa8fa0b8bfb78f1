#!/usr/bin/env bash
# scripts/bench-images.sh — how fast flow's image_mirror copies images between two
# registries, against `crane copy` (one image at a time, and in parallel) and
# `skopeo sync`, cold (empty target) and warm (everything already present).
#
#   bash scripts/bench-images.sh
#   BENCH_IMAGES_REPS=5 bash scripts/bench-images.sh
#
# Setup: two or more Debian docker-registry (distribution 2.8) processes on
# 127.0.0.1, filesystem storage in a temporary directory. The source is seeded
# once with BENCH_IMAGES images (default 20) of 5 layers of 1 MiB random bytes each,
# pushed with `crane append`. Every repetition gives each tool a new, empty target
# registry; the tool copies all images (cold), then copies them again (warm).
# Tools take turns in a rotating order, so load from other users of the machine
# falls on all alike; each measurement waits for a quiet second first, and each row
# records the CPU the rest of the machine used meanwhile ("others").
#
#   flow        flow run of one image_mirror task, parallelism BENCH_IMAGES_PARALLELISM
#               (default 4, image_mirror's default), new state file each time
#   crane-seq   crane copy, one image after another
#   crane-par   crane copy, BENCH_IMAGES_PARALLELISM at a time (xargs -P)
#   skopeo      skopeo sync --src yaml --preserve-digests (sequential by design)
#
# After the first cold copy of each tool the script checks that every target
# digest equals the source's.
#
# Environment: BENCH_IMAGES_REPS (default 3), BENCH_IMAGES (20),
# BENCH_IMAGES_PARALLELISM (4), BENCH_IMAGES_TOOLS ("flow crane-seq crane-par skopeo"),
# BENCH_OUT (raw results; default a new /tmp/flow-bench-images-results.* directory).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
REPS=${BENCH_IMAGES_REPS:-3}
N=${BENCH_IMAGES:-20}
PAR=${BENCH_IMAGES_PARALLELISM:-4}
LAYERS=5
CRANE_VERSION=v0.22.1
CRANE=$ROOT/.cache/bin/crane
REGISTRY=/usr/bin/docker-registry
GO=${GO:-go}
export GOFLAGS=${GOFLAGS:--buildvcs=false}

log() { printf 'bench-images: %s\n' "$*" >&2; }
die() { printf 'bench-images: %s\n' "$*" >&2; exit 1; }

# On a fresh machine (as root) the peers come from Debian's packages.
missing=()
[ -x "$REGISTRY" ] || missing+=(docker-registry)
command -v skopeo >/dev/null || missing+=(skopeo)
[ -x /usr/bin/time ] || missing+=(time)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  log "installing ${missing[*]}"
  bash "$(dirname "$0")/apt-install.sh" "${missing[@]}"
fi
[ -x "$REGISTRY" ] || die "$REGISTRY is missing (Debian package docker-registry)"
command -v skopeo >/dev/null || die "skopeo is missing (Debian package skopeo)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"
if [ ! -x "$CRANE" ]; then
  log "installing crane $CRANE_VERSION into $(dirname "$CRANE") (once)"
  GOBIN=$(dirname "$CRANE") "$GO" install "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
fi

WORK=$(mktemp -d /tmp/flow-bench-images.XXXXXX)
OUT=${BENCH_OUT:-$(mktemp -d /tmp/flow-bench-images-results.XXXXXX)}
mkdir -p "$OUT"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

FLOW=$WORK/flow
"$GO" build -o "$FLOW" ./cmd/flow

# ---- registries ----------------------------------------------------------------

# free_port prints a loopback port nothing listens on.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

# start_registry NAME: starts an empty registry; sets REG_HOST and REG_PID.
start_registry() {
  local dir=$WORK/registries/$1 port
  rm -rf "$dir"
  mkdir -p "$dir/data"
  port=$(free_port)
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/data
http:
  addr: 127.0.0.1:$port
EOF
  "$REGISTRY" serve "$dir/config.yml" >"$dir/log" 2>&1 &
  REG_PID=$!
  PIDS+=("$REG_PID")
  REG_HOST=127.0.0.1:$port
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return; fi
    sleep 0.05
  done
  die "registry $1 did not start; see $dir/log"
}

stop_registry() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# ---- source images ---------------------------------------------------------------

start_registry source
SRC=$REG_HOST
SRC_PID=$REG_PID
log "seeding $SRC with $N images of $LAYERS x 1 MiB random layers"
IMAGES=()
for i in $(seq -f '%02g' 0 $((N - 1))); do
  layers=()
  for l in $(seq "$LAYERS"); do
    d=$WORK/layers/$i-$l
    mkdir -p "$d"
    head -c 1048576 /dev/urandom >"$d/blob-$i-$l"
    tar -C "$d" -cf "$d.tar" "blob-$i-$l"
    layers+=(-f "$d.tar")
  done
  "$CRANE" append --insecure "${layers[@]}" -t "$SRC/bench/app$i:v1" >/dev/null 2>&1
  IMAGES+=("bench/app$i:v1")
done
rm -rf "$WORK/layers"

# The flow: one image_mirror task over every image.
{
  echo 'task "image_mirror" "bench" {'
  echo '  images = ['
  for img in "${IMAGES[@]}"; do echo "    \"$SRC/$img\","; done
  echo '  ]'
  echo '  registry    = var.target'
  echo "  parallelism = $PAR"
  echo '}'
  echo 'variable "target" { type = string }'
} >"$WORK/mirror.hcl"

# skopeo's list of what to sync.
{
  echo "$SRC:"
  echo '  tls-verify: false'
  echo '  images:'
  for img in "${IMAGES[@]}"; do echo "    ${img%:*}: [\"${img#*:}\"]"; done
} >"$WORK/sync.yaml"

# ---- the tools -------------------------------------------------------------------

# copy_with TOOL DST: copies every image from SRC to DST.
copy_with() {
  local dst=$2
  case $1 in
  flow)
    "$FLOW" run "$WORK/mirror.hcl" --state "$WORK/state-$RANDOM$RANDOM.db" --var "target=$dst" >"$WORK/last.log" 2>&1
    ;;
  crane-seq)
    for img in "${IMAGES[@]}"; do "$CRANE" copy --insecure "$SRC/$img" "$dst/$img" 2>>"$WORK/last.log"; done
    ;;
  crane-par)
    printf '%s\n' "${IMAGES[@]}" |
      xargs -P "$PAR" -I{} "$CRANE" copy --insecure "$SRC/{}" "$dst/{}" 2>>"$WORK/last.log"
    ;;
  skopeo)
    skopeo --insecure-policy sync --src yaml --dest docker --dest-tls-verify=false --preserve-digests \
      "$WORK/sync.yaml" "$dst/bench" >"$WORK/last.log" 2>&1
    ;;
  esac
}

# busy_ticks prints the CPU ticks the whole machine has spent working so far.
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# proc_ticks PID prints the CPU ticks PID has used.
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# wait_quiet waits (up to 20 s) for a second in which the machine is at most 10%
# busy, so that a measurement starts on a quiet machine when there is one.
wait_quiet() {
  local i b0 b1 hz ncpu
  hz=$(getconf CLK_TCK)
  ncpu=$(nproc)
  for ((i = 0; i < 20; i++)); do
    b0=$(busy_ticks)
    sleep 1
    b1=$(busy_ticks)
    awk -v d=$((b1 - b0)) -v hz="$hz" -v n="$ncpu" 'BEGIN { exit !(d / hz / n <= 0.10) }' && return 0
  done
  log "the machine stayed busy for 20 s; measuring anyway"
}

# measure TOOL DST PHASE REP: times one copy and appends a row to the results.
measure() {
  local tool=$1 dst=$2 phase=$3 rep=$4 t0 t1 b0 b1 r0 r1 c0 c1 wall cpu others hz
  hz=$(getconf CLK_TCK)
  : >"$WORK/last.log"
  b0=$(busy_ticks)
  r0=$(($(proc_ticks "$SRC_PID") + $(proc_ticks "$DST_PID")))
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$WORK/time" bash -c "$(declare -f copy_with); $(declare -p IMAGES FLOW WORK SRC CRANE PAR); copy_with $tool $dst" ||
    die "$tool $phase failed: $(tail -5 "$WORK/last.log")"
  t1=$(date +%s%N)
  b1=$(busy_ticks)
  r1=$(($(proc_ticks "$SRC_PID") + $(proc_ticks "$DST_PID")))
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", (b - a) / 1e9}')
  cpu=$(awk '{printf "%.2f", $1 + $2}' "$WORK/time")
  others=$(awk -v b="$((b1 - b0))" -v r="$((r1 - r0))" -v c="$cpu" -v hz="$hz" 'BEGIN{o = (b - r) / hz - c; printf "%.2f", o < 0 ? 0 : o}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$phase" "$rep" "$wall" "$cpu" "$others" >>"$OUT/images.tsv"
  log "$(printf '%-9s %-4s rep %s: %6.3f s wall, %5.2f s CPU, others %5.2f s' "$tool" "$phase" "$rep" "$wall" "$cpu" "$others")"
}

# verify DST: every image at DST has the source's digest.
verify() {
  local img want got
  for img in "${IMAGES[@]}"; do
    want=$("$CRANE" digest --insecure "$SRC/$img")
    got=$("$CRANE" digest --insecure "$1/$img")
    [ "$want" = "$got" ] || die "$1/$img: digest $got, want $want"
  done
}

# ---- the run ---------------------------------------------------------------------

printf 'tool\tphase\trep\twall_s\tcpu_s\tothers_cpu_s\n' >"$OUT/images.tsv"
read -ra TOOLS <<<"${BENCH_IMAGES_TOOLS:-flow crane-seq crane-par skopeo}"
log "$REPS repetitions; results in $OUT"
for rep in $(seq "$REPS"); do
  for k in "${!TOOLS[@]}"; do
    tool=${TOOLS[$(((k + rep - 1) % ${#TOOLS[@]}))]}
    start_registry "target-$tool"
    DST=$REG_HOST
    DST_PID=$REG_PID
    wait_quiet
    measure "$tool" "$DST" cold "$rep"
    if [ "$rep" = 1 ]; then verify "$DST"; fi
    wait_quiet
    measure "$tool" "$DST" warm "$rep"
    stop_registry "$DST_PID"
  done
done
stop_registry "$SRC_PID"

# ---- summary ---------------------------------------------------------------------

# column TOOL PHASE COL: that column of the matching rows, one per line.
column() { awk -F'\t' -v t="$1" -v p="$2" -v c="$3" '$1 == t && $2 == p { print $c }' "$OUT/images.tsv"; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

{
  echo "$N images x $LAYERS x 1 MiB, parallelism $PAR, $REPS repetitions ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
  printf '%-10s %-5s %9s %9s %13s %11s %11s\n' tool phase median_s min_s ms_per_image median_cpu others_max
  for tool in "${TOOLS[@]}"; do
    for phase in cold warm; do
      med=$(column "$tool" "$phase" 4 | median)
      min=$(column "$tool" "$phase" 4 | sort -n | head -1)
      cpu=$(column "$tool" "$phase" 5 | median)
      oth=$(column "$tool" "$phase" 6 | sort -n | tail -1)
      printf '%-10s %-5s %9.3f %9.3f %13.1f %11.2f %11.2f\n' "$tool" "$phase" "$med" "$min" \
        "$(awk -v m="$med" -v n="$N" 'BEGIN { print m * 1000 / n }')" "$cpu" "$oth"
    done
  done
} | tee "$OUT/summary.txt"

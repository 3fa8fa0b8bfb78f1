#!/usr/bin/env bash
# bench-pg.sh: a PostgreSQL state against a state file, in farm-bench pairs (docs/performance.md,
# "PostgreSQL state"). It starts a throwaway cluster of its own (initdb in a temporary
# directory, a loopback port; as root it runs as the user postgres), and stops it with pg_ctl.
#
#   P1  2,000 independent `true`, a new state each run: PostgreSQL (A) vs a file (B); target A/B <= 1.5
#   P2  flow status of a 149-instance state (the k8s lab's size) from a second process: PostgreSQL (A)
#       vs a file (B);
#       target: A's median within 50 ms
#
# BENCH_OUT=DIR keeps farm-bench's reports there (default bench/results/DATE-pg).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)-pg}
RUNS=${BENCH_RUNS:-7}
mkdir -p "$OUT"
(cd "$ROOT" && go build -o "$OUT/flow" ./cmd/flow)
FLOW=$OUT/flow

BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
WORK=$(mktemp -d /tmp/flow-bench-pg.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$WORK"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo bench > "$WORK/pw" && chmod 644 "$WORK/pw"
as_pg "$BIN/initdb" -D "$WORK/data" -U flow --pwfile "$WORK/pw" -A scram-sha-256 --auth-local=trust -N >/dev/null
as_pg "$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/log" -o "-p $PORT -k $WORK -c listen_addresses=127.0.0.1" -w start >/dev/null
trap 'as_pg "$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null; rm -rf "$WORK"' EXIT
as_pg "$BIN/psql" -h "$WORK" -p "$PORT" -U flow -d postgres -qc "CREATE DATABASE bench"
export PGPASSWORD=bench
URL="postgres://flow@127.0.0.1:$PORT/bench?sslmode=disable"

W=$WORK/w2 && mkdir -p "$W/states" && chmod 777 "$W"
{
  echo 'task "exec" "t" {'
  printf '  for_each = toset(['
  for ((i = 0; i < 2000; i++)); do printf '"t%05d",' "$i"; done
  printf '])\n  command  = ["true"]\n}\n'
} >"$W/flow.hcl"
cd "$W"
echo "== P1: 2,000 true, new state per run: PostgreSQL (A) vs file (B)" | tee "$OUT/p1.txt"
farm-bench -n "$RUNS" --timeout 900 \
  --vs "sh -c 'exec $FLOW --state $W/states/s-\$\$.db run flow.hcl --parallelism 8 >/dev/null'" \
  -- sh -c "exec $FLOW --state '$URL&state=w2-'\$\$ run flow.hcl --parallelism 8 >/dev/null" | tee -a "$OUT/p1.txt"

# P2: a state the size of the k8s lab's (149 instances, each with a line of output).
S=$WORK/status && mkdir -p "$S" && chmod 777 "$S"
{
  echo 'task "exec" "i" {'
  printf '  for_each = toset(['
  for ((i = 0; i < 149; i++)); do printf '"i%03d",' "$i"; done
  printf '])\n  command  = ["echo", "instance ${each.key} is up at 10.0.0.1:6443"]\n}\n'
} >"$S/flow.hcl"
cd "$S"
"$FLOW" --state "$URL&state=status" run flow.hcl --parallelism 8 >/dev/null
"$FLOW" --state "$S/status.db" run flow.hcl --parallelism 8 >/dev/null
echo "== P2: flow status of a 149-instance state from a second process: PostgreSQL (A) vs file (B)" | tee "$OUT/p2.txt"
farm-bench -n "$RUNS" --timeout 300 --vs "$FLOW --state $S/status.db status" \
  -- "$FLOW" --state "$URL&state=status" status | tee -a "$OUT/p2.txt"

#!/usr/bin/env bash
# lab-usage.sh SECONDS INSTANCE...: prints each LXD container's memory (resident, and the
# cgroup's whole charge including page cache) and its CPU over a window of SECONDS, as a
# percentage of one core, read from the container's cgroup v1 accounting on the host, then
# the total. docs/performance.md quotes it for the labs at rest.
set -euo pipefail
secs=${1:?usage: lab-usage.sh SECONDS INSTANCE...}; shift
cg=/sys/fs/cgroup
cpu() { cat "$cg/cpuacct/lxc.payload.$1/cpuacct.usage"; }
declare -A before
for i in "$@"; do before[$i]=$(cpu "$i"); done
sleep "$secs"
printf '%-14s %10s %10s %8s\n' instance rss_MiB charged_MiB cpu_%
t_rss=0 t_mem=0 t_cpu=0
for i in "$@"; do
  rss=$(awk '$1 == "total_rss" {print int($2 / 1048576)}' "$cg/memory/lxc.payload.$i/memory.stat")
  mem=$(( $(cat "$cg/memory/lxc.payload.$i/memory.usage_in_bytes") / 1048576 ))
  pct=$(awk -v a="${before[$i]}" -v b="$(cpu "$i")" -v s="$secs" 'BEGIN {printf "%.1f", (b - a) / (s * 1e7)}')
  printf '%-14s %10d %10d %8s\n' "$i" "$rss" "$mem" "$pct"
  t_rss=$((t_rss + rss)) t_mem=$((t_mem + mem))
  t_cpu=$(awk -v a="$t_cpu" -v b="$pct" 'BEGIN {print a + b}')
done
printf '%-14s %10d %10d %8s\n' total "$t_rss" "$t_mem" "$t_cpu"

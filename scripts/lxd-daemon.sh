# lxd-daemon.sh — sourced by lab-host-b.sh and lab-cluster.sh: starts one more LXD daemon
# beside the machine's own, as LAB-RECIPES §6 has it.
#
#   start_lxd_daemon LXD_DIR LOG PIDFILE
#
# The daemon runs in its own session with HTTPS_PROXY (and the others) at a closed
# loopback port, so it never reaches out; a caller's LXD_SOCKET is dropped (it would point
# the daemon's own clients at another daemon); no descriptor of the caller's (a lock)
# outlives the call. Its pid goes into PIDFILE, its output into LOG.out.
start_lxd_daemon() {
  local dir=$1 log=$2 pidfile=$3 closed=http://127.0.0.1:9
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] && eval "exec $fd>&-"
    done
    exec env -u LXD_SOCKET LXD_DIR="$dir" HTTPS_PROXY=$closed HTTP_PROXY=$closed \
      https_proxy=$closed http_proxy=$closed \
      setsid lxd --group lxd --logfile "$log" </dev/null >>"$log.out" 2>&1
  ) &
  echo $! >"$pidfile"
}

#!/usr/bin/env bash
# Checks, and on a fresh machine installs, what `make test` needs. With CI=true a
# missing dependency that cannot be installed is a failure, never a silent skip.
set -euo pipefail

need() { # need CMD DEBIAN_PACKAGE
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "prereqs: installing $2 for $1"
  bash "$(dirname "$0")/apt-install.sh" "$2" || true
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "prereqs: $1 is missing (Debian package $2)" >&2
  case "${CI:-}" in ''|0|[Ff][Aa][Ll][Ss][Ee]) ;; *) exit 1 ;; esac # CI unless unset, 0 or false, as internal/ci
  return 0
}

need go golang-go
need make make
need sh dash
need sleep coreutils
need openssl openssl   # the Karmada local lab makes its keys and webhook certificate with it
# e2e's TestFaultRegistryRestart runs the labs' registry as a child process and kills it; it
# starts its own, so the package's service (port 5000) is not started on install.
APT_NO_SERVICE_START=1 need docker-registry docker-registry
# flow ui's browser tests (e2e/ui_test.go, cmd/flow/ui's benchmark) drive Debian's chromium headless.
need chromium chromium
# The state package's contract tests and the PostgreSQL e2e tests start throwaway clusters
# of their own (internal/pgtest: initdb, pg_ctl, psql from Debian's /usr/lib/postgresql/*/bin),
# so the package's cluster is not started on install.
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 ||
  APT_NO_SERVICE_START=1 bash "$(dirname "$0")/apt-install.sh" postgresql ||
  case "${CI:-}" in ''|0|[Ff][Aa][Ll][Ss][Ee]) ;; *) exit 1 ;; esac
# The Python plugin (plugins/python) and its test run on Debian's gRPC for Python.
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null ||
  bash "$(dirname "$0")/apt-install.sh" python3-grpcio python3-protobuf ||
  case "${CI:-}" in ''|0|[Ff][Aa][Ll][Ss][Ee]) ;; *) exit 1 ;; esac
echo "prereqs: ok"

#!/usr/bin/env bash
# The lab doctor's verdict (flows/lab-doctor.hcl): given every finding, one per argument,
# it exits 0 when each is "NAME: ok", else prints those that are not, each with its fix,
# and exits 1, so that `make demo-doctor` (and any script) fails while the lab is not
# whole. Findings that are empty are ignored.
#
#   verdict.sh FINDING...
set -u
problems=()
for f in "$@"; do
  case "$f" in
  "" | *": ok") ;;
  *) problems+=("$f") ;;
  esac
done
if [ ${#problems[@]} -eq 0 ]; then
  echo "the lab is whole: every check is ok"
  exit 0
fi
echo "${#problems[@]} problem(s) found; each line ends with the command that repairs it:"
printf '  %s\n' "${problems[@]}"
exit 1

#!/usr/bin/env bash
# Times one phase of the build or the tests, so a CI log says where its time went.
#
#   scripts/phase.sh NAME COMMAND [ARG ...]   run COMMAND as phase NAME
#   scripts/phase.sh --summary                print the table of the phases recorded so far
#
# Each phase prints `[phase] NAME: start HH:MM:SS` and `[phase] NAME: end HH:MM:SS, Ns, exit RC`
# on stderr and appends one tab-separated row (name, start, end, seconds, exit code) to
# $PHASE_LOG (default .cache/phases.tsv under the repository). The exit code is COMMAND's.
# Phases may nest (make test inside .ci/run): the summary lists them in the order they ended,
# so an outer phase comes after the phases it contains, and its seconds include theirs.
set -uo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log_file=${PHASE_LOG:-$repo_root/.cache/phases.tsv}

if [[ ${1:-} == --summary ]]; then
  [[ -s $log_file ]] || { echo "[phase] no phase recorded in $log_file"; exit 0; }
  awk -F '\t' '
    BEGIN { printf "%-28s %-9s %-9s %9s %5s\n", "phase", "start", "end", "duration", "exit" }
    { printf "%-28s %-9s %-9s %6dm%02ds %5s\n", $1, $2, $3, int($4 / 60), $4 % 60, $5 }
  ' "$log_file"
  exit 0
fi

if (($# < 2)); then
  echo "usage: scripts/phase.sh NAME COMMAND [ARG ...] | --summary" >&2
  exit 2
fi
name=$1
shift
mkdir -p "$(dirname "$log_file")"
start=$(date +%s)
printf '[phase] %s: start %s\n' "$name" "$(date -d "@$start" +%T)" >&2
"$@"
rc=$?
end=$(date +%s)
printf '[phase] %s: end %s, %ss, exit %s\n' "$name" "$(date -d "@$end" +%T)" "$((end - start))" "$rc" >&2
printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(date -d "@$start" +%T)" "$(date -d "@$end" +%T)" "$((end - start))" "$rc" >>"$log_file"
exit "$rc"

#!/usr/bin/env bash
# Times one phase of the build or the tests, so a CI log says where its time went.
#
#   scripts/phase.sh NAME COMMAND [ARG ...]   run COMMAND as phase NAME
#   scripts/phase.sh --summary                print the table of the phases recorded so far
#   scripts/phase.sh --failures               print why the innermost failed phases failed
#
# Each phase prints `[phase] NAME: start HH:MM:SS` and `[phase] NAME: end HH:MM:SS, Ns, exit RC`
# on stderr and appends one tab-separated row (name, start, end, seconds, exit code, start and
# end in epoch seconds) to $PHASE_LOG (default .cache/phases.tsv under the repository). The exit
# code is COMMAND's. With $PHASE_OUTPUT set (.ci/run sets it), a folder, COMMAND's output, stdout
# and stderr as one stream, also goes to PHASE_OUTPUT/NAME.log, which --failures reads: a CI log
# shows only its tail, and what failed first is often far above it (molecule's destroy, the
# other job's held output).
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

if [[ ${1:-} == --failures ]]; then
  [[ -s $log_file ]] || exit 0
  # The failed phases that contain no other failed phase (make-test contains them all), each
  # with the lines that say what failed: Ansible's fatal tasks, pytest's failures, errors. A
  # phase ends, and is recorded, after the phases inside it: a failed row is inner unless an
  # earlier failed row lies within its start and end.
  awk -F '\t' '$5 != 0 && $7 != "" {
      inner = 1
      for (i = 1; i <= n; i++) if (s[i] >= $6 && e[i] <= $7) inner = 0
      n++; s[n] = $6; e[n] = $7
      if (inner) print $1
    }' "$log_file" | while read -r name; do
    out=${PHASE_OUTPUT:+$PHASE_OUTPUT/$name.log}
    printf '\n[phase] %s failed; what it said:\n' "$name"
    if [[ -n $out && -s $out ]]; then
      # Without colours (molecule's), the first failures first: what went wrong before the clean-up.
      sed -E 's/\x1b\[[0-9;]*[mK]//g' "$out" |
        grep -E -A14 'fatal: \[|FAILED!|^FAILED |^ERROR |^E  |^Error|^error|ERROR:' | head -n 40
    else
      echo "  (its output was not kept: set PHASE_OUTPUT)"
    fi
  done
  exit 0
fi

if (($# < 2)); then
  echo "usage: scripts/phase.sh NAME COMMAND [ARG ...] | --summary | --failures" >&2
  exit 2
fi
name=$1
shift
mkdir -p "$(dirname "$log_file")"
start=$(date +%s)
printf '[phase] %s: start %s\n' "$name" "$(date -d "@$start" +%T)" >&2
if [[ -n ${PHASE_OUTPUT:-} ]]; then
  mkdir -p "$PHASE_OUTPUT"
  "$@" 2>&1 | tee -a "$PHASE_OUTPUT/$name.log"
  rc=${PIPESTATUS[0]}
else
  "$@"
  rc=$?
fi
end=$(date +%s)
printf '[phase] %s: end %s, %ss, exit %s\n' "$name" "$(date -d "@$end" +%T)" "$((end - start))" "$rc" >&2
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(date -d "@$start" +%T)" "$(date -d "@$end" +%T)" \
  "$((end - start))" "$rc" "$start" "$end" >>"$log_file"
exit "$rc"

#!/usr/bin/env bash
# The kind tier of the tests (`make kind-test`): a real kind cluster with real
# containers, `molecule test -s kind`. Starts a Docker engine where none
# answers (scripts/docker-engine.sh). Where no engine can run here (no root,
# no cgroups, dockerd fails), it prints why and reports the tier as SKIPPED:
# never as passed, and never as a failure of the product.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

# mktemp, not a name from the pid: a file left by another user under a reused
# pid would be unwritable and the reason lost.
engine_log=$(mktemp)
trap 'rm -f "$engine_log"' EXIT
rc=0
# Its stderr goes to the terminal and to the log through a pipeline, not a
# process substitution: the pipeline ends only when tee has written the last
# line, where `wait` did not always wait for a substitution's tee (CI at load
# 48 read the log before the reason was in it and printed "see above").
# pipefail (set above) makes rc docker-engine.sh's status, tee's being 0.
{ "$repo_root/scripts/docker-engine.sh" start 2>&1 1>&3 3>&- | tee "$engine_log" >&2; } 3>&1 || rc=$?
if ((rc == 3)); then
  reason=$(sed -n 's/^\[docker-engine\] no Docker engine: //p' "$engine_log" | tail -n1)
  echo "SKIPPED: molecule kind scenario: no Docker engine can run here: ${reason:-see above}"
  exit 0
fi
((rc == 0)) || exit "$rc"
rm -f "$engine_log"  # exec below skips the EXIT trap

# The folder build-tools.sh fills (INTERFERENCE_TOOLS_BIN, else the per-user cache); molecule.yml reads it.
export INTERFERENCE_TOOLS_BIN=${INTERFERENCE_TOOLS_BIN:-$HOME/.cache/interference-orchestrator/bin}
"$repo_root/scripts/build-tools.sh" kind kubectl helm
PATH=$INTERFERENCE_TOOLS_BIN:$repo_root/.venv/bin:$PATH exec "$repo_root/.venv/bin/molecule" test -s kind

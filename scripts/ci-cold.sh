#!/usr/bin/env bash
# Runs CI (.ci/run) as a new machine would, and says how long it took: a fresh
# clone of this checkout's HEAD, HOME on an empty folder (so the Go build and
# module caches, pip's cache, ~/.cache and ~/.ansible all start empty), an
# empty .cache/ (the clone has none), the project's Docker images removed and
# a clean environment (`env -i`, CI=true, no standard input), as CI runs it.
#
#   scripts/ci-cold.sh [--keep-images] [WORKDIR]
#
# WORKDIR (default: a new folder under /tmp) gets repo/, home/ and ci.log;
# the last lines of ci.log are the phase table (scripts/phase.sh). What is
# removed: every image named interference-orchestrator/*, interference-extender
# or interference-gpu-scheduler, after deleting the kind clusters that run
# them; --keep-images leaves them (a run with a cold Go and pip cache only).
# Other images and containers are left alone; a Docker engine is started
# where none answers, so that the images can be removed. Needs
# root, like CI. Takes as long as a cold CI run: start it on a quiet machine.
set -euo pipefail

keep_images=false
if [[ ${1:-} == --keep-images ]]; then keep_images=true; shift; fi
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:-$(mktemp -d /tmp/ci-cold.XXXXXX)}
log() { printf '[ci-cold] %s\n' "$*" >&2; }

mkdir -p "$work"
[[ ! -e $work/repo ]] || { log "$work/repo exists: name an empty WORKDIR"; exit 2; }
git clone -q "$repo_root" "$work/repo"
mkdir -p "$work/home"
log "clone of $(git -C "$repo_root" rev-parse --short HEAD) in $work/repo, HOME=$work/home"

# The images live in the engine: start it where none answers (CI stops the one it started, so a
# machine after a CI run has none), or they would all be there for the "cold" run; and stop it
# again once they are gone, so that CI starts its own, as on a new machine.
started_engine=false
if [[ $keep_images == false ]] && ! docker info >/dev/null 2>&1; then
  if "$repo_root/scripts/docker-engine.sh" start >&2; then started_engine=true; else log "no Docker engine: no images to remove"; fi
fi
if [[ $keep_images == false ]] && docker info >/dev/null 2>&1; then
  kind_bin=$(command -v kind || echo "${INTERFERENCE_TOOLS_BIN:-$HOME/.cache/interference-orchestrator/bin}/kind")
  images=$(docker images --format '{{.Repository}}:{{.Tag}}' |
    grep -E '^(interference-orchestrator/|interference-extender:|interference-gpu-scheduler:)' || true)
  # A cluster's node containers keep their image in use: delete the clusters on our node images first
  # (each once: deleting a cluster removes its other nodes, which the list below still names).
  clusters=$(docker ps -a --filter label=io.x-k8s.kind.cluster --format '{{.Image}} {{.Label "io.x-k8s.kind.cluster"}}' |
    awk '$1 ~ /^interference-orchestrator\/kind-node:/ {print $2}' | sort -u)
  for cluster in $clusters; do
    if [[ -x $kind_bin ]]; then "$kind_bin" delete cluster --name "$cluster" >/dev/null 2>&1 || true; fi
  done
  if [[ -n $images ]]; then
    log "removing $(wc -l <<<"$images") project images"
    # shellcheck disable=SC2086 # one reference per word
    docker image rm $images >/dev/null
  fi
  docker builder prune -af >/dev/null 2>&1 || true
fi
[[ $started_engine == false ]] || "$repo_root/scripts/docker-engine.sh" stop >&2

# pyenv's shims find their Python under PYENV_ROOT, which defaults to $HOME/.pyenv.
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
path=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
[[ -d $pyenv_root/shims ]] && path=$pyenv_root/shims:$path
start=$(date +%s)
rc=0
(cd "$work/repo" && env -i PATH="$path" HOME="$work/home" PYENV_ROOT="$pyenv_root" CI=true TERM=dumb \
  bash .ci/run </dev/null >"$work/ci.log" 2>&1) || rc=$?
elapsed=$(($(date +%s) - start))
log "CI exit $rc in $((elapsed / 60))m$((elapsed % 60))s; log: $work/ci.log"
tail -n 40 "$work/ci.log" >&2
exit "$rc"

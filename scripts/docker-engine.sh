#!/usr/bin/env bash
# A Docker engine for the kind tests, where none answers.
#
#   scripts/docker-engine.sh start    install docker.io if dockerd is missing, start it
#   scripts/docker-engine.sh stop     stop the daemon this script started (and only that one)
#   scripts/docker-engine.sh status   say whether an engine answers, and whose it is
#
# An engine that already answers `docker info` is never touched: `start` says
# so and exits 0, `stop` leaves it running. A daemon it starts runs with the
# state in $DOCKER_ENGINE_STATE (pid file, log, runtime wrapper) so `stop` can
# find exactly that process again.
#
# Privileged containers (kind's nodes) need every capability; where the
# host's bounding set lacks one, runc fails with "unable to apply caps".
# `start` probes a privileged container once and, only if that fails, restarts
# dockerd with scripts/runc-drop-caps as its default runtime, saying so.
#
# Exit codes: 0 an engine answers; 3 no engine can run here (the message says
# why: not root, no cgroups, dockerd failed), so callers report the kind tests
# as skipped with that reason.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${DOCKER_ENGINE_STATE:-/run/interference-orchestrator/docker-engine}
pidfile=$state/dockerd.pid
logfile=$state/dockerd.log
runtime_name=runc-drop-caps
probe_image=interference-orchestrator/probe:static

log() { printf '[docker-engine] %s\n' "$*" >&2; }
unavailable() { log "no Docker engine: $*"; exit 3; }

answers() { timeout 20 docker info >/dev/null 2>&1; }

ours() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

install_engine() {
  command -v dockerd >/dev/null && command -v docker >/dev/null && command -v jq >/dev/null && return
  [[ $(id -u) == 0 ]] || unavailable "dockerd is not installed and installing it needs root (apt-get install docker.io jq)"
  command -v apt-get >/dev/null || unavailable "dockerd is not installed and this is not a Debian-like system (install Docker, then rerun)"
  log "apt-get install docker.io jq"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io jq >&2 ||
    unavailable "apt-get install docker.io failed"
}

check_host() {
  [[ $(id -u) == 0 ]] || unavailable "dockerd needs root (this is uid $(id -u))"
  [[ -d /sys/fs/cgroup ]] && [[ -n $(ls -A /sys/fs/cgroup 2>/dev/null) ]] ||
    unavailable "no cgroup file system is mounted at /sys/fs/cgroup"
}

# launch [ARGS...]: start dockerd in the background with our state, wait until it answers.
launch() {
  mkdir -p "$state"
  log "starting dockerd $* (log: $logfile)"
  # setsid: the daemon outlives this script and the shell that ran it.
  setsid dockerd --pidfile "$pidfile" "$@" >>"$logfile" 2>&1 </dev/null &
  local waited=0
  until answers; do
    if ((waited >= 60)); then
      tail -n 20 "$logfile" >&2 || true
      unavailable "dockerd did not answer within 60 s (log above, full log in $logfile)"
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

stop_ours() {
  ours || return 0
  local pid
  pid=$(cat "$pidfile")
  log "stopping dockerd (pid $pid)"
  kill "$pid"
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  rm -f "$pidfile"
}

# A one-file image with a static binary that exits 0: built here, since no
# registry answers, and small enough to build on every start.
probe_image() {
  docker image inspect "$probe_image" >/dev/null 2>&1 && return
  local dir
  dir=$(mktemp -d)
  printf 'int main(void) { return 0; }\n' | cc -static -x c -o "$dir/true" - ||
    unavailable "cannot build the probe image: no C compiler (apt-get install gcc libc6-dev)"
  tar -C "$dir" -c true | docker import -c 'ENTRYPOINT ["/true"]' - "$probe_image" >/dev/null
  rm -rf "$dir"
}

# Each kind node runs systemd and a kubelet, which use inotify instances; the
# kernel's default of 128 lets a second cluster's kubelet fail its health
# check. Raised to what kind's known-issues page suggests, never lowered.
raise_inotify_limits() {
  local key want now
  for key in fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288; do
    want=${key#*=}
    now=$(sysctl -n "${key%=*}" 2>/dev/null || echo 0)
    if ((now < want)); then
      sysctl -qw "$key" && log "raised ${key%=*} from $now to $want (kind's known issues)" ||
        log "could not raise ${key%=*} (is $now): several kind clusters at once may fail"
    fi
  done
}

privileged_works() { docker run --rm --privileged "$probe_image" >/dev/null 2>"$state/probe.err"; }

start() {
  if answers && ! ours; then
    log "an engine already answers (docker info): using it as it is"
    return
  fi
  if ours; then
    log "dockerd started earlier by this script answers (pid $(cat "$pidfile"))"
    return
  fi
  check_host
  install_engine
  mkdir -p "$state"
  install -m 0755 "$repo_root/scripts/runc-drop-caps" "$state/$runtime_name"
  raise_inotify_limits
  launch
  probe_image
  if privileged_works; then
    log "privileged containers run with plain runc"
    return
  fi
  log "a privileged container fails with plain runc: $(tail -n 1 "$state/probe.err")"
  log "restarting dockerd with $runtime_name as its default runtime (drops the capabilities this host's bounding set lacks)"
  stop_ours
  launch --add-runtime "$runtime_name=$state/$runtime_name" --default-runtime "$runtime_name"
  privileged_works || unavailable "privileged containers fail even with $runtime_name: $(tail -n 1 "$state/probe.err")"
  log "privileged containers run through $runtime_name"
}

status() {
  if ours; then
    log "dockerd started by this script answers (pid $(cat "$pidfile"))"
  elif answers; then
    log "an engine answers that this script did not start"
  else
    log "no engine answers"
    return 1
  fi
}

case ${1:-} in
  start) start ;;
  stop) stop_ours ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

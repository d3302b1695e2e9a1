#!/usr/bin/env bash
# A Debian root file system as a local Docker image, made with debootstrap from
# Debian's own packages: the base of everything the offline path runs (the
# kind node image, its system images, the offline workload images), since no
# image registry answers on machines like ours.
#
#   scripts/debian-rootfs-image.sh [--print-image | --json] NAME PACKAGE...
#
# Prints the image reference, interference-orchestrator/rootfs-NAME:<hash>;
# --print-image only prints it (builds nothing), --json prints
# {"image": ..., "built": true|false}.
# The tag is a hash of the suite, the package list, the mirror and the recipe
# (below), so the same inputs reuse the image already there (seconds) and a
# changed list builds a new one (minutes: debootstrap downloads and unpacks).
set -euo pipefail

mode=""
case ${1:-} in --print-image | --json) mode=$1; shift ;; esac
name=${1:?usage: $0 [--print-image | --json] NAME PACKAGE...}
shift
packages=("$@")
suite=${DEBIAN_ROOTFS_SUITE:-bookworm}

log() { printf '[debian-rootfs %s] %s\n' "$name" "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# The mirror apt already uses here (a deb822 or one-line source), else Debian's own.
mirror=${DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
  mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
fi
if [[ -z $mirror ]]; then
  mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

# Bump when the way the root file system is made below changes.
recipe="debootstrap --variant=minbase; apt lists, .debs, logs and machine-id removed; docker import with PATH; v1"
hash=$( { echo "$suite"; echo "$mirror"; printf '%s\n' "${packages[@]}" | sort; echo "$recipe"; } | sha256sum | cut -c1-12)
image=interference-orchestrator/rootfs-$name:h-$hash

say() { if [[ $mode == --json ]]; then printf '{"image": "%s", "built": %s}\n' "$image" "$1"; else echo "$image"; fi; }
if [[ $mode == --print-image ]]; then
  echo "$image"
  exit 0
fi
if docker image inspect "$image" >/dev/null 2>&1; then
  log "$image: cached"
  say false
  exit 0
fi

command -v debootstrap >/dev/null || {
  [[ $(id -u) == 0 ]] || fail "debootstrap is missing (apt-get install debootstrap)"
  log "apt-get install debootstrap"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2 ||
    fail "apt-get install debootstrap"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/rootfs-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "debootstrap $suite from $mirror with: ${packages[*]}"
include=$(IFS=,; echo "${packages[*]}")
if ! debootstrap --variant=minbase --include="$include" "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  fail "debootstrap (log above)"
fi
# Keep the image small and reproducible: no package lists, caches or machine identity.
rm -rf "$work/root"/var/lib/apt/lists/* "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/log/*.log
: >"$work/root/etc/machine-id"
log "docker import as $image"
tar -C "$work/root" --numeric-owner -c . |
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >/dev/null ||
  fail "docker import"
say true

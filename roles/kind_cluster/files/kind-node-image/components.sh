#!/usr/bin/env bash
# Builds the binaries of the offline kind node image from the Go wrapper
# modules beside it (go/<module>/go.mod and go.sum pin each version; they ship
# with the role, so an installed collection builds the same binaries as the
# source checkout): containerd, ctr, containerd-shim-runc-v2, runc (cgo,
# libseccomp), crictl, the CNI plugins, CoreDNS, etcd 3.6, kubeadm, kubelet,
# kube-proxy, and the control-plane images' kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl.
#
#   components.sh list          the component names, one a line
#   components.sh build NAME    build one component (cached: seconds)
#   components.sh all           build every component, then a summary
#
# Each binary goes to $INTERFERENCE_NODE_BIN (default
# ~/.cache/interference-orchestrator/node-image/bin) with a stamp of what it
# was built from (go.mod, go.sum, flags, Go version), and is reused while the
# stamp is unchanged. The four control-plane binaries are taken from
# $INTERFERENCE_TOOLS_BIN (the tools folder) when they report the pinned
# Kubernetes version there, instead of being built twice.
# Every build prints one line with its duration: "[node-components] NAME: built in 1m12s".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
modules=$here/go
cache_root=$HOME/.cache/interference-orchestrator
node_bin_dir=${INTERFERENCE_NODE_BIN:-$cache_root/node-image/bin}
tools_bin=${INTERFERENCE_TOOLS_BIN:-$cache_root/bin}

log() { printf '[node-components] %s\n' "$*" >&2; }
duration() { local s=$1; if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# Two cores: one link at a time keeps peak memory and swap-free builds sane.
export GOMAXPROCS=${GOMAXPROCS:-2}

# module_version MODULE_DIR MODULE: the version a wrapper module pins.
module_version() { awk -v m="$2" '$1 == m {print $2} $1 == "require" && $2 == m {print $3}' "$modules/$1/go.mod" | head -n1; }
kube_version=$(module_version kubernetes k8s.io/kubernetes)

# kube_ldflags VERSION (kube-ldflags.sh).
# shellcheck source=SCRIPTDIR/kube-ldflags.sh
source "$here/kube-ldflags.sh"

require_go() {
  command -v go >/dev/null && return
  log "go is not installed: the node image's binaries are built from Go modules ($modules)."
  log "Install Go 1.24 or newer (https://go.dev/dl/, or apt-get install golang-go), then rerun."
  exit 1
}

# stamped NAME MODULE_DIR PACKAGE LDFLAGS [TAGS] [CGO]: build PACKAGE of the
# wrapper module into node_bin_dir/NAME unless the stamp beside it matches.
# Prints "built" or "cached" on stdout (the role's changed_when reads it).
stamped() {
  local name=$1 module_dir=$2 package=$3 ldflags=$4 tags=${5:-} cgo=${6:-0}
  local target=$node_bin_dir/$name stamp started
  require_go
  mkdir -p "$node_bin_dir"
  stamp=$(cat "$modules/$module_dir/go.mod" "$modules/$module_dir/go.sum" |
    { cat; echo "$package $ldflags $tags $cgo $(go env GOVERSION)"; } | sha256sum | cut -c1-16)
  if [[ -x $target && -f $target.stamp && $(cat "$target.stamp") == "$stamp" ]]; then
    log "$name ($module_dir): cached"
    echo cached
    return
  fi
  log "$name ($module_dir): building"
  started=$SECONDS
  if ! (cd "$modules/$module_dir" &&
    CGO_ENABLED=$cgo go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$target" "$package"); then
    log "FAILED: building $name from $modules/$module_dir ($package)"
    exit 1
  fi
  echo "$stamp" >"$target.stamp"
  log "$name: built in $(duration $((SECONDS - started)))"
  echo built
}

# control_plane NAME VERSION_ARGS: the tools folder's binary when it reports
# the pinned version (linked, no build), else built like the others.
control_plane() {
  local name=$1 version_args=$2 output
  # shellcheck disable=SC2086 # version_args is a word list on purpose
  if [[ -x $tools_bin/$name ]] && output=$("$tools_bin/$name" $version_args 2>/dev/null) &&
    grep -q -- "${kube_version#v}" <<<"$output"; then
    mkdir -p "$node_bin_dir"
    ln -sfn "$(readlink -f "$tools_bin/$name")" "$node_bin_dir/$name"
    rm -f "$node_bin_dir/$name.stamp"
    log "$name $kube_version: reusing $tools_bin/$name"
    echo cached
    return
  fi
  [[ -L $node_bin_dir/$name ]] && rm -f "$node_bin_dir/$name"
  stamped "$name" kubernetes "k8s.io/kubernetes/cmd/$name" "$(kube_ldflags "$kube_version")"
}

# A new machine lacks libseccomp's headers: as root they are installed (as
# debootstrap and docker.io are by the scripts that need them), else the
# message says what to install.
need_libseccomp() {
  command -v pkg-config >/dev/null && pkg-config --exists libseccomp && return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "runc needs libseccomp's headers: apt-get install pkg-config libseccomp-dev"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      pkg-config libseccomp-dev >&2 && return 0
    log "FAILED: apt-get install pkg-config libseccomp-dev"
  else
    log "FAILED: runc needs libseccomp's headers: install pkg-config and libseccomp-dev (Debian), then rerun"
  fi
  exit 1
}

components=(containerd ctr containerd-shim-runc-v2 runc crictl
  cni-ptp cni-bridge cni-loopback cni-host-local cni-portmap coredns etcd
  kube-apiserver kube-controller-manager kube-scheduler kubectl kubeadm kubelet kube-proxy)

build() {
  local v
  case $1 in
    containerd | ctr | containerd-shim-runc-v2)
      v=$(module_version containerd github.com/containerd/containerd/v2)
      stamped "$1" containerd "github.com/containerd/containerd/v2/cmd/$1" \
        "-X github.com/containerd/containerd/v2/version.Version=$v" "no_aufs no_zfs no_btrfs no_devmapper urfave_cli_no_docs" ;;
    runc)
      v=$(module_version runc github.com/opencontainers/runc)
      # runc needs cgo for libseccomp (Debian: libseccomp-dev, pkg-config).
      need_libseccomp
      stamped runc runc github.com/opencontainers/runc "-X main.version=${v#v}" "seccomp urfave_cli_no_docs" 1 ;;
    crictl)
      v=$(module_version crictl sigs.k8s.io/cri-tools)
      stamped crictl crictl sigs.k8s.io/cri-tools/cmd/crictl "-X sigs.k8s.io/cri-tools/pkg/version.Version=$v" ;;
    cni-ptp | cni-bridge | cni-loopback | cni-host-local | cni-portmap)
      local plugin
      case $1 in cni-host-local) plugin=ipam/host-local ;; cni-portmap) plugin=meta/portmap ;; *) plugin=main/${1#cni-} ;; esac
      v=$(module_version cni-plugins github.com/containernetworking/plugins)
      stamped "$1" cni-plugins "github.com/containernetworking/plugins/plugins/$plugin" \
        "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$v" ;;
    coredns) stamped coredns coredns github.com/coredns/coredns "" ;;
    etcd) stamped etcd etcd-node go.etcd.io/etcd/server/v3 "" ;;
    # The Kubernetes binaries, under the lock scripts/build-tools.sh takes too (kube_lock).
    kube-apiserver | kube-controller-manager | kube-scheduler)
      kube_lock node-components "$1"; control_plane "$1" --version; kube_unlock ;;
    kubectl) kube_lock node-components "$1"; control_plane kubectl "version --client"; kube_unlock ;;
    # Last: they share most packages with the control-plane binaries, whose
    # compiled packages are in the Go build cache by then.
    kubeadm | kubelet | kube-proxy)
      kube_lock node-components "$1"
      stamped "$1" kubernetes "k8s.io/kubernetes/cmd/$1" "$(kube_ldflags "$kube_version")"
      kube_unlock ;;
    *) log "unknown component: $1 (components.sh list names them)"; exit 2 ;;
  esac
}

case ${1:-} in
  list) printf '%s\n' "${components[@]}" ;;
  build)
    [[ -n ${2:-} ]] || { log "usage: components.sh build NAME"; exit 2; }
    build "$2" ;;
  all)
    summary=() total=$SECONDS
    for component in "${components[@]}"; do
      started=$SECONDS
      outcome=$(build "$component")
      summary+=("$component $outcome $(duration $((SECONDS - started)))")
    done
    log "summary ($(duration $((SECONDS - total))) in all):"
    printf '  %s\n' "${summary[@]}" >&2
    log "node image components in $node_bin_dir" ;;
  *) log "usage: components.sh list | build NAME | all"; exit 2 ;;
esac

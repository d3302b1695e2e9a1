#!/usr/bin/env bash
# Builds the real Kubernetes control plane and its companions from the Go
# module proxy, for the kwok provider and the tests: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes),
# etcd 3.5, kwok and kwokctl, helm; and gpu-scheduler, kube-scheduler built with
# this repository's plugins (scheduler-plugins/). Each is pinned by the wrapper module under
# hack/tools/<name>/ and built once into .cache/bin (ignored by git); a binary
# that already reports the pinned version, there or on PATH, is reused.
#
# The offline kind node image (hack/kind-node-image/build.sh) needs more, built
# the same way into .cache/node-image/bin: kubeadm, kubelet and kube-proxy from
# the same k8s.io/kubernetes module (the control-plane binaries above are
# reused, built once), containerd, runc (cgo, libseccomp), crictl, the CNI
# plugins, CoreDNS and etcd 3.6. Those have no common version flag, so
# each carries a stamp file of what it was built from.
#
# The kind tier's registry test (tests/integration/test_registry_existing_kind.py)
# pushes images to a real OCI registry: `registry`, CNCF distribution v3,
# pinned by hack/tools/registry.
#
# Usage: scripts/build-tools.sh [TOOL ...]   (default: the kwok tier's tools, gpu-scheduler and registry)
#        scripts/build-tools.sh gpu-scheduler   (only the plugin scheduler)
#        scripts/build-tools.sh --node-image (the node image's components)
#        scripts/build-tools.sh --for-site   (what site.yml needs here: kind, kubectl
#        and helm when a Docker engine answers, else the kwok set: etcd, kwok,
#        kwokctl, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)
# Building needs Go (the newest `go` directive under hack/tools/); a missing Go
# is reported before the first build, with how to get it.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin_dir=${INTERFERENCE_TOOLS_BIN:-$repo_root/.cache/bin}
node_bin_dir=${INTERFERENCE_NODE_BIN:-$repo_root/.cache/node-image/bin}
mkdir -p "$bin_dir"

command -v go >/dev/null || {
  echo "[build-tools] go is not installed: these tools are built from Go modules." >&2
  echo "[build-tools] Install Go 1.24 or newer (Debian: apt-get install golang-go, then .ci/run shows how a newer toolchain is fetched), or put the binaries on PATH." >&2
  exit 1
}

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$repo_root/hack/tools/kubernetes/go.mod")
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$repo_root/hack/tools/etcd/go.mod")
kwok_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" {print $3}' "$repo_root/hack/tools/kwok/go.mod")
helm_version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3}' "$repo_root/hack/tools/helm/go.mod")
kind_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$repo_root/hack/tools/kind/go.mod")
registry_version=$(awk '$1 == "require" && $2 == "github.com/distribution/distribution/v3" {print $3}' "$repo_root/hack/tools/registry/go.mod")

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# Two cores: one link at a time keeps peak memory and swap-free builds sane.
export GOMAXPROCS=${GOMAXPROCS:-2}

log() { printf '[build-tools] %s\n' "$*" >&2; }

# What each build cost, for the summary at the end (a cold Go cache makes the first builds the slow ones).
built_summary=()
built() {
  log "$1: built in $2 s"
  built_summary+=("$(printf '%-26s %5s s' "$1" "$2")")
}
summarize() {
  ((${#built_summary[@]} > 0)) || return 0
  log "built ${#built_summary[@]} binaries in $SECONDS s:"
  printf '[build-tools]   %s\n' "${built_summary[@]}" >&2
}
trap summarize EXIT

# reports_version BINARY VERSION ARGS...: true when BINARY ARGS prints VERSION.
reports_version() {
  local binary=$1 version=$2 output; shift 2
  # Captured first: `grep -q` in a pipe exits at the first match, and under
  # pipefail the tool's SIGPIPE on its next line would read as a mismatch.
  [[ -x $binary ]] && output=$("$binary" "$@" 2>/dev/null) && grep -q -- "${version#v}" <<<"$output"
}

# ensure NAME VERSION VERSION_ARGS MODULE_DIR PACKAGE LDFLAGS
ensure() {
  local name=$1 version=$2 version_args=$3 module_dir=$4 package=$5 ldflags=$6
  local target=$bin_dir/$name
  # shellcheck disable=SC2086 # version_args is a word list on purpose
  if reports_version "$target" "$version" $version_args; then
    log "$name $version: cached"
    return
  fi
  local on_path
  on_path=$(command -v "$name" || true)
  # shellcheck disable=SC2086
  if [[ -n $on_path && ! $on_path -ef $target ]] && reports_version "$on_path" "$version" $version_args; then
    ln -sf "$on_path" "$target"
    log "$name $version: reusing $on_path"
    return
  fi
  if ! command -v go >/dev/null; then
    log "$name $version is not in $bin_dir and Go is not on PATH to build it."
    log "Install Go 1.21 or newer (https://go.dev/dl/ or apt-get install golang-go); it fetches the" \
      "go$(awk '$1 == "go" {print $2}' "$repo_root"/hack/tools/*/go.mod | sort -V | tail -n1) toolchain" \
      "hack/tools/ asks for itself. Older Go: see .ci/run. Then rerun."
    exit 1
  fi
  log "$name $version: building (minutes when the Go cache is cold)"
  local started=$SECONDS
  (cd "$repo_root/hack/tools/$module_dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$target" "$package")
  built "$name" $((SECONDS - started))
}

# module_version MODULE_DIR MODULE: the version a wrapper module pins.
module_version() { awk -v m="$2" '$1 == m {print $2} $1 == "require" && $2 == m {print $3}' "$repo_root/hack/tools/$1/go.mod" | head -n1; }

# ensure_stamped NAME MODULE_DIR PACKAGE LDFLAGS [TAGS] [CGO]: like ensure, for
# binaries without a common version flag: reused while the stamp beside it
# (go.mod and go.sum of its wrapper module, the flags) is unchanged.
ensure_stamped() {
  local name=$1 module_dir=$2 package=$3 ldflags=$4 tags=${5:-} cgo=${6:-0}
  local target=$node_bin_dir/$name stamp
  mkdir -p "$node_bin_dir"
  stamp=$(cat "$repo_root/hack/tools/$module_dir/go.mod" "$repo_root/hack/tools/$module_dir/go.sum" |
    { cat; echo "$package $ldflags $tags $cgo $(go env GOVERSION)"; } | sha256sum | cut -c1-16)
  if [[ -x $target && -f $target.stamp && $(cat "$target.stamp") == "$stamp" ]]; then
    log "$name ($module_dir): cached"
    return
  fi
  log "$name ($module_dir): building"
  local started=$SECONDS
  if ! (cd "$repo_root/hack/tools/$module_dir" &&
    CGO_ENABLED=$cgo go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$target" "$package"); then
    log "FAILED: building $name from hack/tools/$module_dir ($package)"
    exit 1
  fi
  echo "$stamp" >"$target.stamp"
  built "$name" $((SECONDS - started))
}

build_node_components() {
  local v
  v=$(module_version containerd github.com/containerd/containerd/v2)
  for tool in containerd ctr containerd-shim-runc-v2; do
    ensure_stamped "$tool" containerd "github.com/containerd/containerd/v2/cmd/$tool" \
      "-X github.com/containerd/containerd/v2/version.Version=$v" "no_aufs no_zfs no_btrfs no_devmapper urfave_cli_no_docs"
  done
  v=$(module_version runc github.com/opencontainers/runc)
  # runc needs cgo for libseccomp (Debian: libseccomp-dev, pkg-config). As root
  # they are installed when missing (a new machine lacks them), like debootstrap
  # and docker.io are by the scripts that need them; otherwise say what to install.
  if ! { command -v pkg-config >/dev/null && pkg-config --exists libseccomp; }; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      log "runc needs libseccomp's headers: apt-get install pkg-config libseccomp-dev"
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        pkg-config libseccomp-dev >&2 || { log "FAILED: apt-get install pkg-config libseccomp-dev"; exit 1; }
    else
      log "FAILED: runc needs libseccomp's headers: install pkg-config and libseccomp-dev (Debian), then rerun"
      exit 1
    fi
  fi
  ensure_stamped runc runc github.com/opencontainers/runc "-X main.version=${v#v}" "seccomp urfave_cli_no_docs" 1
  v=$(module_version crictl sigs.k8s.io/cri-tools)
  ensure_stamped crictl crictl sigs.k8s.io/cri-tools/cmd/crictl "-X sigs.k8s.io/cri-tools/pkg/version.Version=$v"
  v=$(module_version cni-plugins github.com/containernetworking/plugins)
  for plugin in main/ptp main/bridge main/loopback ipam/host-local meta/portmap; do
    ensure_stamped "cni-${plugin#*/}" cni-plugins "github.com/containernetworking/plugins/plugins/$plugin" \
      "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$v"
  done
  ensure_stamped coredns coredns github.com/coredns/coredns ""
  v=$(module_version etcd-node go.etcd.io/etcd/server/v3)
  ensure_stamped etcd etcd-node go.etcd.io/etcd/server/v3 ""
  # Last: they share most packages with the control-plane binaries, whose
  # compiled packages are in the Go build cache by then.
  for tool in kubeadm kubelet kube-proxy; do
    ensure_stamped "$tool" kubernetes "k8s.io/kubernetes/cmd/$tool" "$(kube_ldflags)"
  done
}

kube_ldflags() {
  local major minor flags="" pkg
  major=$(cut -d. -f1 <<<"${kube_version#v}")
  minor=$(cut -d. -f2 <<<"${kube_version#v}")
  # kwokctl and clients read these to learn which API server they talk to.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# A hash of the plugin scheduler's sources (Go files, go.mod, go.sum, tests
# aside), stamped as its gitCommit: `gpu-scheduler --version=raw` shows it, so
# an edit to scheduler-plugins/ makes the cached binary stale.
plugins_source_hash() {
  (cd "$repo_root/scheduler-plugins" &&
    find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

build_one() {
  case $1 in
    kube-apiserver | kube-controller-manager | kube-scheduler)
      ensure "$1" "$kube_version" --version kubernetes "k8s.io/kubernetes/cmd/$1" "$(kube_ldflags)" ;;
    gpu-scheduler)
      local hash
      hash=$(plugins_source_hash)
      # module_dir is relative to hack/tools: the module lives in scheduler-plugins/.
      ensure gpu-scheduler "sources-$hash" --version=raw ../../scheduler-plugins ./cmd/scheduler \
        "$(kube_ldflags) -X k8s.io/component-base/version.gitCommit=sources-$hash" ;;
    kubectl)
      ensure kubectl "$kube_version" "version --client" kubernetes k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags)" ;;
    etcd)
      ensure etcd "$etcd_version" --version etcd go.etcd.io/etcd/server/v3 "" ;;
    kwok | kwokctl)
      ensure "$1" "$kwok_version" --version kwok "sigs.k8s.io/kwok/cmd/$1" \
        "-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${kube_version#v}" ;;
    helm)
      ensure helm "$helm_version" version helm helm.sh/helm/v3/cmd/helm \
        "-X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean" ;;
    kind)
      ensure kind "$kind_version" version kind sigs.k8s.io/kind "" ;;
    registry)
      ensure registry "$registry_version" --version registry github.com/distribution/distribution/v3/cmd/registry \
        "-X github.com/distribution/distribution/v3/version.version=$registry_version" ;;
    *) log "unknown tool: $1"; exit 2 ;;
  esac
}

tools=("$@")
if [[ ${tools[0]:-} == --node-image ]]; then
  build_node_components
  log "node image components in $node_bin_dir"
  exit 0
fi
if [[ ${tools[0]:-} == --for-site ]]; then
  if docker info >/dev/null 2>&1; then
    tools=(kind kubectl helm)
  else
    tools=(etcd kwok kwokctl kube-apiserver kube-controller-manager kube-scheduler kubectl)
  fi
fi
if [[ ${#tools[@]} -eq 0 ]]; then
  tools=(etcd kwok kwokctl helm kind kube-apiserver kube-controller-manager kube-scheduler kubectl gpu-scheduler registry)
fi
for tool in "${tools[@]}"; do
  build_one "$tool"
done
log "binaries in $bin_dir"

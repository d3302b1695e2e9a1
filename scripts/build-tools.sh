#!/usr/bin/env bash
# Builds the real Kubernetes control plane and its companions from the Go
# module proxy, for the kwok provider and the tests: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes),
# etcd, kwok and kwokctl, helm; and gpu-scheduler, kube-scheduler built with
# this repository's plugins (scheduler-plugins/). Each is pinned by a wrapper
# module: hack/tools/<name>/ for the tools only the repository builds (kwok,
# helm, registry), and roles/kind_cluster/files/kind-node-image/go/<name>/
# for the ones the kind_cluster role's offline node image also builds
# (kubernetes, kind, etcd-node: one etcd, 3.6, for both tiers, so a cold build
# compiles it once), which ship with the collection. Each is built once into
# the tools folder, $INTERFERENCE_TOOLS_BIN (default
# ~/.cache/interference-orchestrator/bin, where the roles look first); a binary
# that already reports the pinned version, there or on PATH, is reused.
#
# The offline kind node image needs more: --node-image runs the role's
# roles/kind_cluster/files/kind-node-image/components.sh (kubeadm, kubelet,
# kube-proxy, containerd, runc, crictl, the CNI plugins, CoreDNS, etcd 3.6) into
# $INTERFERENCE_NODE_BIN (default ~/.cache/interference-orchestrator/node-image/bin),
# a line per component with its duration and a summary at the end.
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
# Building needs Go (the newest `go` directive of the wrapper modules); a missing Go
# is reported before the first build, with how to get it.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=$HOME/.cache/interference-orchestrator
bin_dir=${INTERFERENCE_TOOLS_BIN:-$cache_root/bin}
export INTERFERENCE_TOOLS_BIN=$bin_dir
node_modules=$repo_root/roles/kind_cluster/files/kind-node-image/go
mkdir -p "$bin_dir"

# module_dir NAME: the folder of a wrapper module (the repository's or the role's).
module_dir() { if [[ -d $repo_root/hack/tools/$1 ]]; then echo "$repo_root/hack/tools/$1"; else echo "$node_modules/$1"; fi; }

command -v go >/dev/null || {
  echo "[build-tools] go is not installed: these tools are built from Go modules." >&2
  echo "[build-tools] Install Go 1.24 or newer (Debian: apt-get install golang-go, then .ci/run shows how a newer toolchain is fetched), or put the binaries on PATH." >&2
  exit 1
}

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$(module_dir kubernetes)/go.mod")
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$(module_dir etcd-node)/go.mod")
kwok_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" {print $3}' "$(module_dir kwok)/go.mod")
helm_version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3}' "$(module_dir helm)/go.mod")
kind_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$(module_dir kind)/go.mod")
registry_version=$(awk '$1 == "require" && $2 == "github.com/distribution/distribution/v3" {print $3}' "$(module_dir registry)/go.mod")

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
      "go$(awk '$1 == "go" {print $2}' "$repo_root"/hack/tools/*/go.mod "$node_modules"/*/go.mod | sort -V | tail -n1) toolchain" \
      "the wrapper modules ask for itself. Older Go: see .ci/run. Then rerun."
    exit 1
  fi
  log "$name $version: building (minutes when the Go cache is cold)"
  local started=$SECONDS dir
  # A path (gpu-scheduler's ../../scheduler-plugins) is relative to hack/tools.
  if [[ $module_dir == */* ]]; then dir=$repo_root/hack/tools/$module_dir; else dir=$(module_dir "$module_dir"); fi
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$target" "$package")
  built "$name" $((SECONDS - started))
}

# kube_ldflags VERSION, shared with the node image's components.sh.
# shellcheck source=SCRIPTDIR/../roles/kind_cluster/files/kind-node-image/kube-ldflags.sh
source "$repo_root/roles/kind_cluster/files/kind-node-image/kube-ldflags.sh"

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
    # The Kubernetes binaries, under the lock the node image's components.sh takes too (kube_lock).
    kube-apiserver | kube-controller-manager | kube-scheduler)
      kube_lock build-tools "$1"
      ensure "$1" "$kube_version" --version kubernetes "k8s.io/kubernetes/cmd/$1" "$(kube_ldflags "$kube_version")"
      kube_unlock ;;
    gpu-scheduler)
      local hash
      hash=$(plugins_source_hash)
      kube_lock build-tools "$1"
      # module_dir is relative to hack/tools: the module lives in scheduler-plugins/.
      ensure gpu-scheduler "sources-$hash" --version=raw ../../scheduler-plugins ./cmd/scheduler \
        "$(kube_ldflags "$kube_version") -X k8s.io/component-base/version.gitCommit=sources-$hash"
      kube_unlock ;;
    kubectl)
      kube_lock build-tools "$1"
      ensure kubectl "$kube_version" "version --client" kubernetes k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags "$kube_version")"
      kube_unlock ;;
    etcd)
      ensure etcd "$etcd_version" --version etcd-node go.etcd.io/etcd/server/v3 "" ;;
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
  exec "$repo_root/roles/kind_cluster/files/kind-node-image/components.sh" all
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

#!/usr/bin/env bash
# Builds the real Kubernetes control plane and its companions from the Go
# module proxy, for the kwok provider and the tests: kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl (k8s.io/kubernetes),
# etcd 3.5, kwok and kwokctl, helm; and gpu-scheduler, kube-scheduler built with
# this repository's plugins (scheduler-plugins/). Each is pinned by the wrapper module under
# hack/tools/<name>/ and built once into .cache/bin (ignored by git); a binary
# that already reports the pinned version, there or on PATH, is reused.
#
# Usage: scripts/build-tools.sh [TOOL ...]   (default: all)
#        scripts/build-tools.sh gpu-scheduler   (only the plugin scheduler)
#        scripts/build-tools.sh --for-site   (what site.yml needs here: kind, kubectl
#        and helm when a Docker engine answers, else the kwok set)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin_dir=${INTERFERENCE_TOOLS_BIN:-$repo_root/.cache/bin}
mkdir -p "$bin_dir"

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$repo_root/hack/tools/kubernetes/go.mod")
etcd_version=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$repo_root/hack/tools/etcd/go.mod")
kwok_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kwok" {print $3}' "$repo_root/hack/tools/kwok/go.mod")
helm_version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3}' "$repo_root/hack/tools/helm/go.mod")
kind_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$repo_root/hack/tools/kind/go.mod")

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# Two cores: one link at a time keeps peak memory and swap-free builds sane.
export GOMAXPROCS=${GOMAXPROCS:-2}

log() { printf '[build-tools] %s\n' "$*" >&2; }

# reports_version BINARY VERSION ARGS...: true when BINARY ARGS prints VERSION.
reports_version() {
  local binary=$1 version=$2; shift 2
  [[ -x $binary ]] && "$binary" "$@" 2>/dev/null | grep -q -- "${version#v}"
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
  if [[ -n $on_path && $on_path != "$target" ]] && reports_version "$on_path" "$version" $version_args; then
    ln -sf "$on_path" "$target"
    log "$name $version: reusing $on_path"
    return
  fi
  log "$name $version: building (minutes when the Go cache is cold)"
  (cd "$repo_root/hack/tools/$module_dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$target" "$package")
  log "$name $version: built"
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
    *) log "unknown tool: $1"; exit 2 ;;
  esac
}

tools=("$@")
if [[ ${tools[0]:-} == --for-site ]]; then
  if docker info >/dev/null 2>&1; then
    tools=(kind kubectl helm)
  else
    tools=()
  fi
fi
if [[ ${#tools[@]} -eq 0 ]]; then
  tools=(etcd kwok kwokctl helm kind kube-apiserver kube-controller-manager kube-scheduler kubectl gpu-scheduler)
fi
for tool in "${tools[@]}"; do
  build_one "$tool"
done
log "binaries in $bin_dir"

# shellcheck shell=bash
# Sourced, not run: by components.sh beside it (the node image's kubeadm,
# kubelet and kube-proxy) and by scripts/build-tools.sh (the tools folder's
# control plane), so every Kubernetes binary built here carries the same
# version stamp, and is built one at a time (kube_lock). Beside components.sh,
# it ships with the collection.

# kube_ldflags VERSION: the linker flags that stamp VERSION (v1.34.4) into a
# k8s.io/kubernetes binary.
kube_ldflags() {
  local version=$1 major minor flags="" pkg
  major=$(cut -d. -f1 <<<"${version#v}")
  minor=$(cut -d. -f2 <<<"${version#v}")
  # kwokctl and clients read these to learn which API server they talk to.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# kube_lock WHO NAME / kube_unlock: hold this machine's lock for building a
# k8s.io/kubernetes binary. `make test` runs `make tools` and the node image's
# components side by side, and both build kube-apiserver, the controller
# manager, kube-scheduler and kubectl from the same module with the same flags.
# Cold, without the lock, both compiled the Kubernetes tree at once (2026-12-02:
# kube-apiserver took 11m28s in one and 9m36s in the other); with it the second
# finds the first's binary (components.sh reuses the tools folder's) or its
# compiled packages in the Go build cache. Without flock (not Linux) it is a no-op.
kube_lock() {
  command -v flock >/dev/null || return 0
  local lock=$HOME/.cache/interference-orchestrator/kubernetes-build.lock
  mkdir -p "${lock%/*}"
  exec {kube_lock_fd}>"$lock"
  flock -n "$kube_lock_fd" && return 0
  printf '[%s] %s: waiting for the other build of a Kubernetes binary (make tools and the node image build the same ones; the second reuses the first)\n' "$1" "$2" >&2
  flock "$kube_lock_fd"
}
kube_unlock() {
  [[ -n ${kube_lock_fd:-} ]] || return 0
  exec {kube_lock_fd}>&-
  kube_lock_fd=
}

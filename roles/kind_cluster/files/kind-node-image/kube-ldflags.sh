# shellcheck shell=bash
# Sourced, not run: by components.sh beside it (the node image's kubeadm,
# kubelet and kube-proxy) and by scripts/build-tools.sh (the tools folder's
# control plane), so every Kubernetes binary built here carries the same
# version stamp. Beside components.sh, it ships with the collection.

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

#!/usr/bin/env bash
# Builds a kind node image for kind v0.30.0 and Kubernetes v1.34.4 from what
# the package registries serve (Go modules, Debian packages), for machines
# where no image registry answers and kindest/node cannot be pulled.
#
#   roles/kind_cluster/files/kind-node-image/build.sh [--print-image | --json]
#   (the kind_cluster role runs it; in the source checkout also `make node-image`)
#
# Prints the image reference (interference-orchestrator/kind-node:v1.34.4-h<hash>);
# with --print-image it only prints the reference the current inputs give,
# building nothing; with --json it prints {"image": ..., "built": true|false}.
# The tag hashes every input (the components' stamps, this folder, the rootfs
# image, kind's base files), so an unchanged tree reuses the image (seconds)
# and any change builds a new one.
#
# It follows kind's own recipe (images/base/Dockerfile, pkg/build/nodeimage),
# with the downloads replaced:
#   base   debootstrap rootfs (debian-rootfs-image.sh) + kind's
#          images/base/files + containerd, runc, crictl, CNI plugins built from
#          the Go wrapper modules under go/ (components.sh)
#   node   kubeadm, kubelet, kubectl in /usr/bin; the images kubeadm and kind
#          expect (kube-apiserver, kube-controller-manager, kube-scheduler,
#          kube-proxy, etcd 3.6.5-0, coredns v1.12.1, pause 3.10 and 3.10.1)
#          built locally and imported into the node's containerd; a small
#          pod-network DaemonSet as the default CNI (default-cni.yaml says
#          why: kindnetd is not a Go module).
# runc inside the node is runc-drop-caps in front of the real runc:
# it drops only the capabilities the node's bounding set lacks, so the
# privileged kube-proxy pods start on hosts like ours and nothing
# changes elsewhere.
set -euo pipefail

# Everything it runs ships in this folder (debian-rootfs-image.sh and
# runc-drop-caps are links to the collection's scripts/, which the workload
# images and the repository's Docker engine share); it writes only under the
# cache folder below and into the Docker engine.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=$HOME/.cache/interference-orchestrator
cache=${INTERFERENCE_NODE_IMAGE_CACHE:-$cache_root/node-image}
export INTERFERENCE_NODE_BIN=$cache/bin
node_bin=$INTERFERENCE_NODE_BIN
mode=${1:-}

step="" step_started=$SECONDS build_started=$SECONDS steps=()
log() { printf '[kind-node-image] %s\n' "$*" >&2; }
duration() { local s=$1; if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }
# On exit: the build container and the work folder go; a failure names the step that failed.
work="" build_container=""
on_exit() {
  local rc=$?
  if [[ -n $build_container ]]; then docker rm -f -v "$build_container" >/dev/null 2>&1; fi
  if [[ -n $work ]]; then rm -rf "$work"; fi
  if ((rc != 0)); then log "FAILED at step: ${step:-setup} (exit $rc)"; fi
}
trap on_exit EXIT
# at STEP: ends the step before (its duration on one line), starts STEP.
at() {
  if [[ -n $step ]]; then
    steps+=("$(duration $((SECONDS - step_started))) $step")
    log "  done in $(duration $((SECONDS - step_started)))"
  fi
  step=$1 step_started=$SECONDS
  [[ -n $step ]] && log "$step"
  true
}
# The steps and their durations, the longest first.
summary() {
  at ""
  log "summary: $(duration $((SECONDS - build_started))) in all"
  printf '%s\n' "${steps[@]}" | sort -t' ' -k1,1 -rV | sed 's/^/  /' >&2
}

kube_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/go/kubernetes/go.mod")
kind_version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kind" {print $3}' "$here/go/kind/go.mod")
etcd_image_tag=3.6.5-0
coredns_tag=v1.12.1
pause_tags=(3.10 3.10.1)

# The packages of kind's images/base (less nfs-common and open-iscsi, which
# only networked storage needs, and fuse-overlayfs, which only rootless needs).
node_packages=(systemd conntrack iptables nftables iproute2 ethtool util-linux mount kmod libseccomp2 pigz
  bash ca-certificates curl jq procps)

at "resolve kind's base files (sigs.k8s.io/kind@$kind_version module)"
command -v go >/dev/null || { log "go is not installed: the offline node image is built from Go modules (install Go 1.24 or newer)"; exit 1; }
kind_src=$(cd "$here/go/kind" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/kind)
[[ -d $kind_src/images/base/files ]] || { log "no images/base/files in $kind_src"; exit 1; }

if [[ $mode != --print-image ]]; then
  at "build the node components (components.sh all: one line per component)"
  "$here/components.sh" all
fi

at "debootstrap the node root file system"
rootfs=$("$here/debian-rootfs-image.sh" node "${node_packages[@]}")

# The hash of every input; a stamp per built binary stands for its build inputs.
inputs_hash() {
  {
    echo "$kube_version $kind_version $rootfs"
    cat "$node_bin"/*.stamp 2>/dev/null || true
    for tool in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      "$node_bin/$tool" --version 2>/dev/null || "$node_bin/$tool" version --client 2>/dev/null || true
    done
    # -L: the linked scripts count by their content.
    find -L "$here" "$kind_src/images/base/files" -type f -print0 | sort -z | xargs -0 sha256sum |
      sed "s#$here/##; s#$kind_src/##"
  } | sha256sum | cut -c1-12
}
image=interference-orchestrator/kind-node:$kube_version-h$(inputs_hash)

if [[ $mode == --print-image ]]; then
  echo "$image"
  exit 0
fi
if docker image inspect "$image" >/dev/null 2>&1; then
  log "$image: cached"
  if [[ $mode == --json ]]; then printf '{"image": "%s", "built": false}\n' "$image"; else echo "$image"; fi
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kind-node-image.XXXXXX")

# image_from_binary NAME TAG BASE BINARY [ENTRYPOINT]: a one-binary image,
# saved as a docker archive for the node's containerd.
# quiet_build ARGS...: docker build, printing its output only when it fails
# (the classic builder's deprecation banner would drown the steps otherwise).
quiet_build() {
  local output
  if ! output=$(docker build -q "$@" 2>&1); then
    printf '%s\n' "$output" >&2
    return 1
  fi
}

image_from_binary() {
  local name=$1 tag=$2 base=$3 binary=$4 entrypoint=${5:-}
  local context=$work/images/$name
  mkdir -p "$context"
  cp "$binary" "$context/$(basename "$binary")"
  {
    echo "FROM $base"
    echo "COPY $(basename "$binary") /usr/local/bin/$(basename "$binary")"
    echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    [[ -n $entrypoint ]] && echo "ENTRYPOINT [\"$entrypoint\"]"
    true
  } >"$context/Dockerfile"
  quiet_build -t "$tag" "$context"
}

at "images: a static-binary base (scratch with /tmp)"
mkdir -p "$work/scratch/tmp"
chmod 1777 "$work/scratch/tmp"
scratch=interference-orchestrator/static-base:node-build
tar -C "$work/scratch" -c tmp | docker import - "$scratch" >/dev/null

at "images: pause (kubernetes build/pause/linux/pause.c, static)"
k8s_src=$(cd "$here/go/kubernetes" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' k8s.io/kubernetes)
mkdir -p "$work/pause"
cc -Os -static -DVERSION="v${pause_tags[-1]}-interference-orchestrator" -o "$work/pause/pause" "$k8s_src/build/pause/linux/pause.c"
image_from_binary pause "registry.k8s.io/pause:${pause_tags[0]}" "$scratch" "$work/pause/pause" /usr/local/bin/pause
for tag in "${pause_tags[@]:1}"; do docker tag "registry.k8s.io/pause:${pause_tags[0]}" "registry.k8s.io/pause:$tag"; done

at "images: kube-apiserver, kube-controller-manager, kube-scheduler ($kube_version)"
for component in kube-apiserver kube-controller-manager kube-scheduler; do
  image_from_binary "$component" "registry.k8s.io/$component:$kube_version" "$scratch" "$(readlink -f "$node_bin/$component")"
done
at "images: a network base (the node rootfs, iptables in the node's own mode)"
mkdir -p "$work/network-base"
cp "$here/iptables-wrapper" "$work/network-base/iptables-wrapper"
cat >"$work/network-base/Dockerfile" <<DOCKERFILE
FROM $rootfs
COPY iptables-wrapper /usr/sbin/iptables-wrapper
RUN for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do \\
      ln -sf iptables-wrapper "/usr/sbin/\$name"; done
DOCKERFILE
network_base=interference-orchestrator/network-base:node-build
quiet_build -t "$network_base" "$work/network-base"
at "images: kube-proxy ($kube_version, with the node's iptables and conntrack)"
image_from_binary kube-proxy "registry.k8s.io/kube-proxy:$kube_version" "$network_base" "$node_bin/kube-proxy"
at "images: etcd ($etcd_image_tag)"
image_from_binary etcd "registry.k8s.io/etcd:$etcd_image_tag" "$scratch" "$node_bin/etcd"
at "images: coredns ($coredns_tag)"
image_from_binary coredns "registry.k8s.io/coredns/coredns:$coredns_tag" "$scratch" "$node_bin/coredns" /usr/local/bin/coredns
at "images: pod-network (the network base: bash, curl, jq, iproute2, iptables)"
pod_network_tag=${rootfs##*:}-$(sha256sum "$here/iptables-wrapper" | cut -c1-8)
docker tag "$network_base" "interference-orchestrator/pod-network:$pod_network_tag"

node_images=(
  "registry.k8s.io/kube-apiserver:$kube_version" "registry.k8s.io/kube-controller-manager:$kube_version"
  "registry.k8s.io/kube-scheduler:$kube_version" "registry.k8s.io/kube-proxy:$kube_version"
  "registry.k8s.io/etcd:$etcd_image_tag" "registry.k8s.io/coredns/coredns:$coredns_tag"
  "interference-orchestrator/pod-network:$pod_network_tag"
)
for tag in "${pause_tags[@]}"; do node_images+=("registry.k8s.io/pause:$tag"); done

at "base image: kind's images/base on the debootstrap rootfs"
base_context=$work/base
mkdir -p "$base_context/bin" "$base_context/cni"
cp -r "$kind_src/images/base/files" "$base_context/files"
chmod -R u+w "$base_context/files"
for binary in containerd ctr containerd-shim-runc-v2 crictl runc; do cp "$node_bin/$binary" "$base_context/bin/"; done
for plugin in ptp bridge loopback host-local portmap; do cp "$node_bin/cni-$plugin" "$base_context/cni/$plugin"; done
cp "$here/runc-drop-caps" "$base_context/bin/runc-drop-caps"
cp "$here/base.Dockerfile" "$base_context/Dockerfile"
base_image=interference-orchestrator/kind-base:$kube_version-node-build
quiet_build --build-arg "ROOTFS=$rootfs" -t "$base_image" "$base_context"

at "node image: start a build container from the base image"
build_container=kind-node-build-$$
docker run -d --name "$build_container" --entrypoint=sleep --security-opt seccomp=unconfined "$base_image" infinity >/dev/null
in_node() { docker exec "$build_container" "$@"; }

at "node image: kubeadm, kubelet, kubectl into /usr/bin"
for binary in "$node_bin/kubeadm" "$node_bin/kubelet" "$node_bin/kubectl"; do
  docker cp "$(readlink -f "$binary")" "$build_container:/usr/bin/$(basename "$binary")"
  in_node chmod 0755 "/usr/bin/$(basename "$binary")"
  in_node chown root:root "/usr/bin/$(basename "$binary")"
done
docker exec -i "$build_container" sh -c 'cat >/kind/version' <<<"$kube_version"

at "node image: kubeadm lists the images it expects"
mapfile -t expected < <(in_node kubeadm config images list --kubernetes-version "$kube_version")
for want in "${expected[@]}"; do
  [[ " ${node_images[*]} " == *" $want "* ]] || { log "kubeadm expects $want, which this build does not make"; exit 1; }
done

at "node image: the default CNI manifest (pod-network, see default-cni.yaml)"
in_node mkdir -p /kind/manifests
sed "s/@POD_NETWORK_TAG@/$pod_network_tag/g" "$here/default-cni.yaml" |
  docker exec -i "$build_container" sh -c 'cat >/kind/manifests/default-cni.yaml'

at "node image: import the images into the node's containerd"
in_node bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
# shellcheck disable=SC2016 # expanded by the node's shell, not here
in_node bash -c 'for i in $(seq 30); do [[ -S /run/containerd/containerd.sock ]] && ctr version >/dev/null 2>&1 && exit 0; sleep 1; done; cat /tmp/containerd.log; exit 1'
for ref in "${node_images[@]}"; do
  docker save "$ref" | docker exec -i "$build_container" \
    ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null
done
imported=$(in_node ctr --namespace=k8s.io images list -q)
for ref in "${node_images[@]}"; do
  qualified=$ref
  [[ $ref == registry.k8s.io/* ]] || qualified=docker.io/$ref
  grep -qxF "$qualified" <<<"$imported" || { log "image $qualified missing from the node's containerd after import"; exit 1; }
done
# Stop containerd so its metadata is on disk before the commit. Nothing
# reaps it in the build container (PID 1 is sleep), so an exited containerd
# stays a zombie: wait until no live one is left.
in_node pkill -x containerd
# shellcheck disable=SC2016 # expanded by the node's shell, not here
in_node bash -c 'for i in $(seq 60); do ps -C containerd -o stat= | grep -qv "^Z" || exit 0; sleep 1; done
  echo "containerd did not stop within 60 s" >&2; exit 1'

at "node image: commit $image"
docker commit \
  --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
  --change 'ENV HTTP_PROXY="" HTTPS_PROXY="" NO_PROXY=""' \
  "$build_container" "$image" >/dev/null
docker rmi "$base_image" "$scratch" "$network_base" >/dev/null 2>&1 || true
summary
log "built $image"
if [[ $mode == --json ]]; then printf '{"image": "%s", "built": true}\n' "$image"; else echo "$image"; fi

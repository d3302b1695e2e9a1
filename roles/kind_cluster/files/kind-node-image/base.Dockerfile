# kind's images/base (sigs.k8s.io/kind images/base/Dockerfile), on a
# debootstrap root file system instead of debian:bookworm-slim, with the
# binaries built from Go modules instead of downloaded. The classic builder
# suffices: nothing here runs apt or fetches anything.
ARG ROOTFS
FROM ${ROOTFS}

COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/LICENSES/ /LICENSES/
COPY files/etc/ /etc/
COPY bin/containerd bin/ctr bin/containerd-shim-runc-v2 bin/crictl /usr/local/bin/
# runc behind the capability-dropping wrapper (see scripts/runc-drop-caps):
# containerd's shim runs "runc" from PATH, and /usr/local/sbin comes first.
COPY bin/runc /usr/local/sbin/runc.real
COPY bin/runc-drop-caps /usr/local/sbin/runc
COPY cni/ /opt/cni/bin/

# restrict_oom_score_adj (set below): containerd keeps every container's
# oom_score_adj at or above its own. Lowering it needs CAP_SYS_RESOURCE, which
# hosts like ours cannot grant, so the kubelet's -998 for critical pods would
# fail the sandbox ("failed to update /proc/self/oom_score_adj"). Where the
# capability exists containerd runs at -999 (kind's unit), so the clamp
# changes nothing there. kind sets the same option for rootless nodes.

RUN chmod 0755 /usr/local/bin/* /usr/local/sbin/* /kind/bin /kind/bin/* /opt/cni/bin/* \
 && find /etc/containerd /etc/default /etc/sysctl.d /etc/systemd/system /etc/crictl.yaml -type f -exec chmod 0644 {} + \
 && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete \
 && rm -f /lib/systemd/system/multi-user.target.wants/* \
 && rm -f /etc/systemd/system/*.wants/* \
 && rm -f /lib/systemd/system/local-fs.target.wants/* \
 && rm -f /lib/systemd/system/sockets.target.wants/*udev* \
 && rm -f /lib/systemd/system/sockets.target.wants/*initctl* \
 && rm -f /lib/systemd/system/basic.target.wants/* \
 && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \
 && ln -sf "$(command -v systemd || echo /lib/systemd/systemd)" /sbin/init \
 && systemctl enable kubelet.service \
 && systemctl enable containerd.service \
 && systemctl enable undo-mount-hacks.service \
 && systemctl mask systemd-binfmt.service \
 && mkdir -p /etc/kubernetes/manifests \
 && sed -i 's/^\(\s*restrict_oom_score_adj\s*=\s*\)false/\1true/' /etc/containerd/config.toml \
 && grep -q 'restrict_oom_score_adj = true' /etc/containerd/config.toml \
 && ctr oci spec \
    | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json \
 && containerd --version && runc --version && crictl --version

ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]

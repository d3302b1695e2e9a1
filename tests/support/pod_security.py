"""What a rendered pod template lacks of the hardening the checkov findings of issue 12 ask for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def hardening_gaps(pod: Mapping[str, Any]) -> list[str]:
    """Each container's missing hardening, as `container: what` (empty when none is missing).

    Asked for: not root, the runtime's default seccomp profile, no privilege
    escalation, no capabilities, a read-only root filesystem, CPU and memory
    limits. A container's own securityContext wins over the pod's, as in Kubernetes.
    """
    gaps = []
    pod_security = pod.get("securityContext") or {}
    for container in pod["containers"]:
        security = {**pod_security, **(container.get("securityContext") or {})}
        name = container["name"]
        if security.get("runAsNonRoot") is not True or security.get("runAsUser", 0) == 0:
            gaps.append(f"{name}: may run as root")
        if (security.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            gaps.append(f"{name}: no RuntimeDefault seccomp profile")
        if security.get("allowPrivilegeEscalation") is not False or security.get("privileged"):
            gaps.append(f"{name}: may escalate privileges")
        if (security.get("capabilities") or {}).get("drop") != ["ALL"]:
            gaps.append(f"{name}: keeps capabilities")
        if security.get("readOnlyRootFilesystem") is not True:
            gaps.append(f"{name}: writable root filesystem")
        limits = (container.get("resources") or {}).get("limits") or {}
        gaps.extend(f"{name}: no {resource} limit" for resource in ("cpu", "memory") if resource not in limits)
    return gaps

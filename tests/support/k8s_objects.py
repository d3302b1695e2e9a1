"""Pods, Nodes and ExtenderArgs bodies built from the kubernetes client's models.

The tests, the benchmark and anyone trying the service by hand need request
bodies shaped exactly as kube-scheduler sends them: ExtenderArgs with the Go
field names at the top (`Pod`, `Nodes`, `NodeNames`) and API objects
serialised as the API server would (`ApiClient.sanitize_for_serialization`,
camelCase, nulls dropped). Nodes carry what a real kubelet reports (conditions,
addresses, node info, images), so body sizes are realistic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import APP_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import TYPE_LABEL
from kubernetes import client

from interference_extender.facts import GPU_MEMORY_LABEL, ZONE_LABEL

_API = client.ApiClient()
NODE_IMAGES = 8  # images a kubelet lists in status.images (kind nodes list about this many)


def serialise(obj: Any) -> Any:
    """An API object (or list of them) as plain JSON data, as the API server sends it."""
    return _API.sanitize_for_serialization(obj)


def make_node(
    name: str,
    gpus: int = 0,
    gpu_memory: str | None = None,
    zone: str | None = None,
    labels: Mapping[str, str] | None = None,
    *,
    cpu: str | None = "8",
) -> client.V1Node:
    """A Ready node with kubelet-like status; `gpus` adds nvidia.com/gpu capacity, `cpu` None leaves out CPUs."""
    node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    if gpu_memory is not None:
        node_labels[GPU_MEMORY_LABEL] = gpu_memory
    if zone is not None:
        node_labels[ZONE_LABEL] = zone
    node_labels.update(labels or {})
    capacity = {"cpu": cpu or "", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    if cpu is None:
        del capacity["cpu"]
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    condition_types = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
    return client.V1Node(
        api_version="v1",
        kind="Node",
        metadata=client.V1ObjectMeta(
            name=name,
            labels=node_labels,
            annotations={
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            uid=f"00000000-0000-0000-0000-{abs(hash(name)) % 10**12:012d}",
            resource_version="1000",
        ),
        spec=client.V1NodeSpec(pod_cidr="10.244.1.0/24", provider_id=f"kind://docker/cluster/{name}"),
        status=client.V1NodeStatus(
            capacity=capacity,
            allocatable=dict(capacity),
            conditions=[
                client.V1NodeCondition(
                    type=kind,
                    status="True" if kind == "Ready" else "False",
                    reason=f"Kubelet{kind}",
                    message=f"kubelet reports {kind}",
                )
                for kind in condition_types
            ],
            addresses=[
                client.V1NodeAddress(type="InternalIP", address="172.18.0.2"),
                client.V1NodeAddress(type="Hostname", address=name),
            ],
            node_info=client.V1NodeSystemInfo(
                architecture="amd64",
                boot_id="b",
                container_runtime_version="containerd://2.1.1",
                kernel_version="6.8.0",
                kube_proxy_version="",
                kubelet_version="v1.34.4",
                machine_id="m",
                operating_system="linux",
                os_image="Debian GNU/Linux 12 (bookworm)",
                system_uuid="u",
            ),
            images=[
                client.V1ContainerImage(
                    names=[f"registry.k8s.io/image-{i}@sha256:{i:064d}", f"registry.k8s.io/image-{i}:v1.34.4"],
                    size_bytes=10_000_000 + i,
                )
                for i in range(NODE_IMAGES)
            ],
        ),
    )


def make_pod(  # noqa: PLR0917 - keyword arguments in practice; each says one thing about the pod
    name: str,
    namespace: str = "default",
    pod_type: str | None = None,
    app: str | None = None,
    gpus: int = 0,
    gpu_in: str = "limits",
    node_name: str | None = None,
    tolerations: Sequence[client.V1Toleration] = (),
    annotations: Mapping[str, str] | None = None,
    scheduler_name: str = "interference-scheduler",
) -> client.V1Pod:
    """A one-container pod; `pod_type` sets the interference type label, `gpus` nvidia.com/gpu."""
    labels: dict[str, str] = {}
    if pod_type is not None:
        labels[TYPE_LABEL] = pod_type
    if app is not None:
        labels[APP_LABEL] = app
    requests: dict[str, str] = {"cpu": "100m", "memory": "64Mi"}
    limits: dict[str, str] = {}
    if gpus:
        (limits if gpu_in == "limits" else requests)["nvidia.com/gpu"] = str(gpus)
    return client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=client.V1ObjectMeta(
            name=name, namespace=namespace, labels=labels or None, annotations=dict(annotations or {}) or None
        ),
        spec=client.V1PodSpec(
            scheduler_name=scheduler_name,
            node_name=node_name,
            tolerations=list(tolerations) or None,
            containers=[
                client.V1Container(
                    name="main",
                    image="busybox:1.36",
                    resources=client.V1ResourceRequirements(requests=requests, limits=limits or None),
                )
            ],
        ),
        status=client.V1PodStatus(phase="Running" if node_name else "Pending"),
    )


def extender_args(pod: client.V1Pod, nodes: Sequence[client.V1Node], node_cache_capable: bool) -> dict[str, Any]:
    """The ExtenderArgs body kube-scheduler sends for `pod` and these candidate nodes.

    As Go's encoding/json writes it: both fields present, the unused one null.
    """
    if node_cache_capable:
        names = [node.metadata.name for node in nodes if node.metadata]
        return {"Pod": serialise(pod), "Nodes": None, "NodeNames": names}
    return {"Pod": serialise(pod), "Nodes": {"metadata": {}, "items": serialise(list(nodes))}, "NodeNames": None}

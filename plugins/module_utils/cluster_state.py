"""The cluster readers: what k8s_info results say about the nodes and about the apps this collection manages.

`nodes_from_k8s` reads Node objects into the engine's node dicts (its body is
still in model.py, next to the node parsing it feeds, and is re-exported here
so callers read the cluster from one module; moving the body is a later,
self-contained change).

`deployment_annotations` gives the annotations the apps role writes on each
Deployment (the plan and the app item); two readings of k8s_info results,
one before the plan and one after the apply:
- `deployed_apps`: from the managed Deployments, the plan each was pinned to
  (so running replicas stay where they are) and the app items of those whose
  app is no longer listed;
- `placement_mismatches`: from the managed pods, the apps that do not run on
  exactly their planned nodes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from . import schema
from .errors import ClusterObjectError, PodObjectError

PLANNED_NODES_ANNOTATION = "interference.orchestrator/planned-nodes"
APP_ITEM_ANNOTATION = "interference.orchestrator/app"
APP_LABEL = "app.kubernetes.io/name"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "interference.orchestrator"
# Pods one run reads (all namespaces, not finished): Kubernetes' own tested limit for a cluster.
MAX_CLUSTER_PODS = 150_000
# Phases whose pods hold no resources any more (the apps role also leaves them out in its field selector).
FINISHED_PHASES = ("Succeeded", "Failed")
# The resources a node's requests are summed over, as the engine reads them (model.Node), with their unit.
COUNTED_RESOURCES: tuple[tuple[str, bool], ...] = (("cpu", True), ("memory", False), ("nvidia.com/gpu", False))
# Bytes (keys and values) the two annotations above may take on one
# Deployment. Kubernetes allows 256 KiB for all annotations of an object, but
# the apps role applies client-side, which copies the whole manifest into
# kubectl.kubernetes.io/last-applied-configuration: these annotations again,
# escaped once more (up to twice the bytes), the planned nodes once more in
# the node affinity, and the container's env, command and args (from the same
# app item; env in Kubernetes' longer list form). An eighth keeps the total
# under 256 KiB whatever the app holds.
MANAGED_ANNOTATIONS_MAX_BYTES = 32 * 1024


def deployment_annotations(item: Mapping[str, Any], nodes: Sequence[str] | None) -> dict[str, str]:
    """The annotations of an app's Deployment: its planned nodes (pinned apps only) and its item as JSON.

    `nodes` holds one node name per replica, None for an app a scheduler
    places. The item is written as Ansible's `to_json(sort_keys=true)` writes
    it, which `deployed_apps` reads back.
    """
    annotations = {}
    if nodes is not None:
        annotations[PLANNED_NODES_ANNOTATION] = ",".join(nodes)
    annotations[APP_ITEM_ANNOTATION] = json.dumps(item, sort_keys=True)
    return annotations


def annotations_size(annotations: Mapping[str, str]) -> int:
    """Bytes Kubernetes counts for annotations: keys and values, UTF-8."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def _objects(resources: object) -> list[Mapping[str, Any]]:
    if not isinstance(resources, Sequence) or isinstance(resources, (str, bytes)):
        raise ClusterObjectError(None, None, "resources", "expected the `resources` list of a k8s_info result")
    for index, item in enumerate(resources):
        if not isinstance(item, Mapping) or not isinstance(item.get("metadata"), Mapping):
            raise ClusterObjectError(index, None, "metadata", "not a Kubernetes object")
    return list(resources)


def deployed_apps(deployments: object, node_names: Sequence[str], listed: Sequence[str]) -> dict[str, Any]:
    """Read the managed Deployments: {managed, previous, unlisted}.

    `managed`: every Deployment name. `previous`: app name -> the planned
    nodes of its annotation that are still in `node_names` (a replica on a
    node that is gone or cordoned is placed afresh; an app with none left is
    left out). `unlisted`: the app items (from their annotation) of the
    Deployments whose name is not in `listed`, in the order read.
    """
    objects = _objects(deployments)
    known = set(node_names)
    listed_names = set(listed)
    managed: list[str] = []
    previous: dict[str, list[str]] = {}
    unlisted: list[Any] = []
    for index, item in enumerate(objects):
        metadata = item["metadata"]
        name = str(metadata.get("name") or "")
        managed.append(name)
        annotations = metadata.get("annotations") or {}
        planned = annotations.get(PLANNED_NODES_ANNOTATION)
        if planned:
            kept = [node for node in str(planned).split(",") if node in known]
            if kept:
                previous[name] = kept
        raw_item = annotations.get(APP_ITEM_ANNOTATION)
        if raw_item and name not in listed_names:
            try:
                unlisted.append(json.loads(raw_item))
            except ValueError:
                raise ClusterObjectError(
                    index, name, f"metadata.annotations.{APP_ITEM_ANNOTATION}", "is not JSON: edited by hand?"
                ) from None
    return {"managed": managed, "previous": previous, "unlisted": unlisted}


def placement_mismatches(planned: Mapping[str, Any], pods: object) -> list[str]:
    """One sentence per pinned app whose pods do not run on exactly its planned nodes.

    `planned` is the result of `apps_plan.plan_apps`; apps left to the
    scheduler extender are not checked. Pods being deleted (an earlier
    ReplicaSet's) do not count. The pod count and the set of nodes must match
    the plan; how many replicas each node got may differ within the plan's own
    skew, which is all the Deployment's topology spread pins down.
    """
    running: dict[str, list[str]] = {}
    for item in _objects(pods):
        metadata = item["metadata"]
        if metadata.get("deletionTimestamp"):
            continue
        app = (metadata.get("labels") or {}).get(APP_LABEL)
        if app:
            running.setdefault(app, []).append((item.get("spec") or {}).get("nodeName") or "")
    found = []
    for entry in planned.get("apps") or []:
        if entry.get("extender"):
            continue
        nodes = running.get(entry["name"], [])
        if len(nodes) != len(entry["nodes"]) or set(nodes) != set(entry["nodes"]):
            runs = ", ".join(node or "no node" for node in nodes) or "no pod"
            found.append(f"{entry['name']}: planned on {', '.join(entry['nodes'])}, runs on {runs}")
    return found


def _container_requests(container: object, field: str) -> dict[str, Decimal]:
    if not isinstance(container, Mapping):
        raise schema.FieldError(field, f"must be a container (a mapping), {schema.got(container)}")
    resources = schema.mapping(container.get("resources"), f"{field}.resources", "requests and limits")
    requests = schema.mapping(resources.get("requests"), f"{field}.resources.requests", "resource to quantity")
    result = {}
    for name, _ in COUNTED_RESOURCES:
        if requests.get(name) is not None:
            try:
                result[name] = schema.bounded_quantity(requests[name])
            except (TypeError, ValueError) as exc:
                raise schema.FieldError(f"{field}.resources.requests.{name}", f"not a quantity: {exc}") from None
    return result


def _containers(spec: Mapping[object, object], key: str) -> list[object]:
    value = spec.get(key)
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise schema.FieldError(f"spec.{key}", f"must be a list of containers, {schema.got(value)}")
    return list(value)


def pod_requests(spec: Mapping[object, object]) -> dict[str, Decimal]:
    """What a pod requests of cpu, memory and GPUs, as kube-scheduler counts it.

    The sum over its containers and its sidecars (init containers with
    `restartPolicy: Always`), or the largest plain init container (with the
    sidecars started before it) when that is more, plus the pod's overhead.
    """
    total: dict[str, Decimal] = {}
    for position, container in enumerate(_containers(spec, "containers")):
        for name, amount in _container_requests(container, f"spec.containers[{position}]").items():
            total[name] = total.get(name, Decimal(0)) + amount
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for position, container in enumerate(_containers(spec, "initContainers")):
        amounts = _container_requests(container, f"spec.initContainers[{position}]")
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            for name, amount in amounts.items():
                sidecars[name] = sidecars.get(name, Decimal(0)) + amount
            continue
        for name, _ in COUNTED_RESOURCES:
            during = amounts.get(name, Decimal(0)) + sidecars.get(name, Decimal(0))
            init_peak[name] = max(init_peak.get(name, Decimal(0)), during)
    overhead = schema.mapping(spec.get("overhead"), "spec.overhead", "resource to quantity")
    result = {}
    for name, _ in COUNTED_RESOURCES:
        amount = max(total.get(name, Decimal(0)) + sidecars.get(name, Decimal(0)), init_peak.get(name, Decimal(0)))
        if overhead.get(name) is not None:
            try:
                amount += schema.bounded_quantity(overhead[name])
            except (TypeError, ValueError) as exc:
                raise schema.FieldError(f"spec.overhead.{name}", f"not a quantity: {exc}") from None
        if amount:
            result[name] = amount
    return result


def _is_managed(metadata: Mapping[object, object], managed_namespace: object) -> bool:
    """An app pod of this collection: labelled managed-by it and the app's name, in the apps namespace."""
    labels = metadata.get("labels")
    return (
        isinstance(labels, Mapping)
        and labels.get(MANAGED_BY_LABEL) == MANAGED_BY
        and APP_LABEL in labels
        and managed_namespace is not None
        and metadata.get("namespace") == managed_namespace
    )


def _counted_pod(pod: object, managed_namespace: object) -> tuple[str, dict[str, Decimal]] | None:
    """(node name, requests) of a pod that holds resources the plan must leave free, else None."""
    if not isinstance(pod, Mapping) or not isinstance(pod.get("metadata"), Mapping):
        raise schema.FieldError("metadata", "missing: not a Kubernetes Pod object")
    metadata = pod["metadata"]
    spec = schema.mapping(pod.get("spec"), "spec", "Pod spec fields")
    status = schema.mapping(pod.get("status"), "status", "Pod status fields")
    node_name = spec.get("nodeName")
    if not node_name or status.get("phase") in FINISHED_PHASES or _is_managed(metadata, managed_namespace):
        return None
    if not isinstance(node_name, str):
        raise schema.FieldError("spec.nodeName", f"must be a node name, {schema.got(node_name)}")
    return node_name, pod_requests(spec)


def requested_by_node(pods: object, managed_namespace: object = None) -> dict[str, dict[str, Any]]:
    """Per node name, what the pods bound there that this collection does not manage request.

    `pods` is the `resources` of a k8s_info on Pods (at most
    MAX_CLUSTER_PODS). Pods with no node yet and finished pods (FINISHED_PHASES)
    are not counted; the app pods in `managed_namespace` are not either, as
    the plan places them itself. Each entry: `cpu` (e.g. '1500m'), `memory`
    (bytes), `nvidia.com/gpu` and `pods` (their count), as model.NODE_FIELDS'
    `requested` takes them. A malformed pod raises PodObjectError naming its
    index and field.
    """
    if not isinstance(pods, Sequence) or isinstance(pods, (str, bytes)):
        raise PodObjectError(None, None, "pods", f"expected the `resources` list of a k8s_info on Pods, "
                                                 f"{schema.got(pods)}")
    if len(pods) > MAX_CLUSTER_PODS:
        raise PodObjectError(None, None, "pods", f"{len(pods):,} pods, more than the {MAX_CLUSTER_PODS:,} one run "
                                                 "reads (Kubernetes' tested limit per cluster)")
    totals: dict[str, dict[str, Decimal]] = {}
    for index, pod in enumerate(pods):
        metadata = pod.get("metadata") if isinstance(pod, Mapping) else None
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        try:
            counted = _counted_pod(pod, managed_namespace)
        except schema.FieldError as exc:
            raise PodObjectError(index, name if isinstance(name, str) else None, exc.field, exc.problem) from None
        if counted is None:
            continue
        node_name, requests = counted
        node = totals.setdefault(node_name, {"pods": Decimal(0)})
        node["pods"] += 1
        for resource, amount in requests.items():
            node[resource] = node.get(resource, Decimal(0)) + amount
    result: dict[str, dict[str, Any]] = {}
    for node_name, amounts in totals.items():
        entry: dict[str, Any] = {"pods": int(amounts.pop("pods"))}
        for resource, millis in COUNTED_RESOURCES:
            if resource in amounts:
                entry[resource] = f"{math.ceil(amounts[resource] * 1000)}m" if millis else math.ceil(amounts[resource])
        result[node_name] = entry
    return result


def nodes_from_k8s(resources: object, pods: object = None, managed_namespace: object = None) -> list[dict[str, Any]]:
    """The cluster's Node reader: Node objects (and the pods on them) to the engine's node mappings.

    Its body is the engine's `model.nodes_from_k8s`, which needs
    `requested_by_node` from this module: imported when called, so neither
    module imports the other at load time.
    """
    from .model import nodes_from_k8s as read_nodes

    return read_nodes(resources, pods, managed_namespace)

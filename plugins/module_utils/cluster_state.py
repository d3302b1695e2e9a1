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
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ClusterObjectError
from .model import nodes_from_k8s  # noqa: F401 - re-exported: the cluster's Node reader

PLANNED_NODES_ANNOTATION = "interference.orchestrator/planned-nodes"
APP_ITEM_ANNOTATION = "interference.orchestrator/app"
APP_LABEL = "app.kubernetes.io/name"
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

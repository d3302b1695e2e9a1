"""What the extender knows about pods and nodes: facts read from API objects, and the index of bound pods.

Pods and Nodes arrive as API JSON (camelCase), inside kube-scheduler's
requests or from the watch. Go's decoder matches keys case-insensitively, so
`field_of` does too. A pod's interference profile is read as the apps role
writes it (`plugins/module_utils/contract.py`): the profile annotation, else
the seed type label.

Units: GPU counts are devices; GPU memory is bytes; interference is the
engine's unitless score.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.contract import TYPE_LABEL, pod_profile
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    PRESSURE_DIMENSIONS,
    Profile,
    dot,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import GPU_RESOURCE, parse_quantity

INTERRUPTIBLE_ANNOTATION = "interference.orchestrator/interruptible"
APP_LABEL = "app.kubernetes.io/name"
GPU_MEMORY_LABEL = "gpu.nvidia.com/memory"
ZONE_LABEL = "topology.kubernetes.io/zone"
# Capacity-type labels of EKS managed node groups and of Karpenter, with the
# value each uses for spot capacity (compared case-insensitively).
SPOT_LABELS: dict[str, str] = {
    "eks.amazonaws.com/capacityType": "spot",
    "karpenter.sh/capacity-type": "spot",
}
MIB = 1024 * 1024
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def field_of(mapping: Mapping[str, Any], key: str) -> Any:
    """Value of `key` in a JSON object, matched as Go's decoder does (exact, else case-insensitive)."""
    if key in mapping:
        return mapping[key]
    folded = key.casefold()
    for candidate, value in mapping.items():
        if isinstance(candidate, str) and candidate.casefold() == folded:
            return value
    return None


def _object(value: Any) -> Mapping[str, Any]:
    """A JSON object, or an empty one for null/missing (Go leaves nil pointers empty)."""
    return value if isinstance(value, Mapping) else {}


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}




@dataclass(frozen=True)
class PodFacts:
    """The parts of a Pod the extender decides by."""

    key: str  # namespace/name
    node_name: str | None
    scheduler_name: str | None
    type_label: str | None  # lower case, None when the pod has no type label
    profile: Profile | None  # None: the pod says nothing about its pressure
    app_key: str | None  # namespace/app.kubernetes.io/name, for the zone spread
    gpus: int
    interruptible: bool
    terminal: bool


def _container_gpus(containers: Any) -> int:
    """Largest per-container GPU count asked for, as requests or limits (devices)."""
    total = 0
    if not isinstance(containers, Sequence):
        return 0
    for container in containers:
        resources = _object(field_of(_object(container), "resources"))
        amount = 0
        for kind in ("requests", "limits"):
            value = _object(field_of(resources, kind)).get(GPU_RESOURCE)
            if value is None:
                continue
            try:
                amount = max(amount, math.ceil(parse_quantity(value)))
            except (ValueError, ArithmeticError):
                continue
        total += amount
    return total


def pod_gpus(spec: Mapping[str, Any]) -> int:
    """GPUs a pod needs (devices): the sum over containers, or the largest init container."""
    regular = _container_gpus(field_of(spec, "containers"))
    init = field_of(spec, "initContainers")
    init_max = max((_container_gpus([c]) for c in init), default=0) if isinstance(init, Sequence) else 0
    return max(regular, init_max)


def _tolerates_interruption(spec: Mapping[str, Any], annotations: Mapping[str, str]) -> bool:
    if annotations.get(INTERRUPTIBLE_ANNOTATION, "").lower() == "true":
        return True
    tolerations = field_of(spec, "tolerations")
    if not isinstance(tolerations, Sequence):
        return False
    for item in tolerations:
        toleration = _object(item)
        key = field_of(toleration, "key") or ""
        if key in SPOT_LABELS or (not key and field_of(toleration, "operator") == "Exists"):
            return True
    return False


def pod_facts(pod: Mapping[str, Any]) -> PodFacts:
    """Read a Pod object (API JSON, camelCase) into PodFacts."""
    metadata = _object(field_of(pod, "metadata"))
    spec = _object(field_of(pod, "spec"))
    status = _object(field_of(pod, "status"))
    labels = _string_map(field_of(metadata, "labels"))
    annotations = _string_map(field_of(metadata, "annotations"))
    namespace = str(field_of(metadata, "namespace") or "default")
    name = str(field_of(metadata, "name") or field_of(metadata, "generateName") or "")
    raw_type = labels.get(TYPE_LABEL)
    type_label = raw_type.lower() if raw_type else None
    app = labels.get(APP_LABEL)
    return PodFacts(
        key=f"{namespace}/{name}",
        node_name=field_of(spec, "nodeName") or None,
        scheduler_name=field_of(spec, "schedulerName") or None,
        type_label=type_label,
        profile=pod_profile(annotations, labels),
        app_key=f"{namespace}/{app}" if app else None,
        gpus=pod_gpus(spec),
        interruptible=_tolerates_interruption(spec, annotations),
        terminal=field_of(status, "phase") in TERMINAL_PHASES,
    )


@dataclass(frozen=True)
class NodeFacts:
    """The parts of a Node the extender decides by."""

    name: str
    gpu_capacity: int  # devices in status.capacity
    gpu_memory_bytes: int | None  # from GPU_MEMORY_LABEL
    zone: str | None
    spot: bool


def gpu_memory_bytes(value: str | None) -> int | None:
    """Parse the GPU memory label: a quantity (`16Gi`) or a bare number of MiB (`16384`, as NVIDIA's labels)."""
    if not value:
        return None
    try:
        if value.isdigit():
            return int(value) * MIB
        return math.ceil(parse_quantity(value))
    except (ValueError, ArithmeticError):
        return None


def node_facts(node: Mapping[str, Any]) -> NodeFacts:
    """Read a Node object (API JSON, camelCase) into NodeFacts."""
    metadata = _object(field_of(node, "metadata"))
    status = _object(field_of(node, "status"))
    labels = _string_map(field_of(metadata, "labels"))
    capacity = _object(field_of(status, "capacity"))
    gpus = 0
    raw_gpus = capacity.get(GPU_RESOURCE)
    if raw_gpus is not None:
        try:
            gpus = math.floor(parse_quantity(raw_gpus))
        except (ValueError, ArithmeticError):
            gpus = 0
    return NodeFacts(
        name=str(field_of(metadata, "name") or ""),
        gpu_capacity=gpus,
        gpu_memory_bytes=gpu_memory_bytes(labels.get(GPU_MEMORY_LABEL)),
        zone=labels.get(ZONE_LABEL) or None,
        spot=any(labels.get(key, "").lower() == value for key, value in SPOT_LABELS.items()),
    )


class PodIndex:
    """The pods bound to nodes, indexed for the decisions.

    Kept up to date by the service's watch (upsert/remove per event); every
    method is O(1) or O(pods of one app), so a request costs O(candidate nodes).
    Not thread-safe by itself: the service holds a lock around updates and reads.
    """

    def __init__(self) -> None:
        self._pods: dict[str, PodFacts] = {}
        self._profile_sums: dict[str, list[float]] = {}
        self._type_counts: dict[str, Counter[str]] = {}
        self._app_nodes: dict[str, Counter[str]] = {}

    def pods(self) -> list[PodFacts]:
        """Every pod in the index."""
        return list(self._pods.values())

    def __len__(self) -> int:
        return len(self._pods)

    def _add(self, facts: PodFacts, sign: int) -> None:
        node = facts.node_name
        if node is None:
            return
        if facts.profile is not None:
            sums = self._profile_sums.setdefault(node, [0.0] * len(PRESSURE_DIMENSIONS))
            for i, value in enumerate(facts.profile):
                sums[i] += sign * value
        if facts.type_label:
            counts = self._type_counts.setdefault(node, Counter())
            counts[facts.type_label] += sign
            if counts[facts.type_label] <= 0:
                del counts[facts.type_label]
        if facts.app_key:
            nodes = self._app_nodes.setdefault(facts.app_key, Counter())
            nodes[node] += sign
            if nodes[node] <= 0:
                del nodes[node]

    def upsert(self, facts: PodFacts) -> None:
        """Record a pod; pods not bound to a node or finished are dropped from the index."""
        self.remove(facts.key)
        if facts.node_name is None or facts.terminal:
            return
        self._pods[facts.key] = facts
        self._add(facts, +1)

    def remove(self, key: str) -> None:
        """Forget a pod (namespace/name); unknown keys are ignored."""
        old = self._pods.pop(key, None)
        if old is not None:
            self._add(old, -1)

    def clear(self) -> None:
        """Forget every pod (before a re-list)."""
        self._pods.clear()
        self._profile_sums.clear()
        self._type_counts.clear()
        self._app_nodes.clear()

    def interference(self, profile: Profile, node: str) -> float:
        """Interference (score) a pod of this profile would have with the pods on `node`."""
        sums = self._profile_sums.get(node)
        return dot(profile, sums) if sums is not None else 0.0

    def types_on(self, node: str) -> Counter[str]:
        """Count of pods per type label on `node`."""
        return self._type_counts.get(node) or Counter()

    def app_nodes(self, app_key: str) -> Counter[str]:
        """Count of pods of one app per node."""
        return self._app_nodes.get(app_key) or Counter()




def known_nodes_from(objects: Iterable[Mapping[str, Any]]) -> dict[str, NodeFacts]:
    """NodeFacts by name for a list of Node objects (a NodeList's items)."""
    facts = (node_facts(node) for node in objects)
    return {f.name: f for f in facts if f.name}

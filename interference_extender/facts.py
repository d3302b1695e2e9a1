"""What the extender knows about pods and nodes: facts read from API objects, and the index of bound pods.

Pods and Nodes arrive as API JSON (camelCase), inside kube-scheduler's
requests or from the watch. Go's decoder matches keys case-insensitively, so
`field_of` does too. Every field read is type-checked as it is read: a wrong
one raises ExtenderInputError naming its JSON path (the service answers 400),
so no request body can reach the decisions with, say, a list where a name
belongs. A pod's interference profile is read as the apps role writes it
(`plugins/module_utils/contract.py`): the profile annotation, else the seed
type label.

Units: GPU counts are devices; GPU memory is bytes; interference is the
engine's unitless score.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils import schema
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import APP_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    TYPE_LABEL,
    pod_cpu_demand,
    pod_profile,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    PRESSURE_DIMENSIONS,
    Profile,
    dot,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import GPU_RESOURCE, parse_quantity
from ansible_collections.interference.orchestrator.plugins.module_utils.timesharing import NodeLoad

NO_PRESSURE: Profile = (0.0,) * len(PRESSURE_DIMENSIONS)

INTERRUPTIBLE_ANNOTATION = "interference.orchestrator/interruptible"
GPU_MEMORY_LABEL = "gpu.nvidia.com/memory"
ZONE_LABEL = "topology.kubernetes.io/zone"
# Capacity-type labels of EKS managed node groups and of Karpenter, with the
# value each uses for spot capacity (compared case-insensitively).
SPOT_LABELS: dict[str, str] = {
    "eks.amazonaws.com/capacityType": "spot",
    "karpenter.sh/capacity-type": "spot",
}
MIB = 1024 * 1024
# Largest quantity the extender accepts: Go's resource.Quantity.Value() is an
# int64, the bound the engine's schema puts on a quantity's thousandths.
MAX_QUANTITY = schema.QUANTITY_MAX
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class ExtenderInputError(PlacementError):
    """A request body is not what kube-scheduler sends; the message names the field (its JSON path)."""


def field_of(mapping: Mapping[str, Any], key: str) -> Any:
    """Value of `key` in a JSON object, matched as Go's decoder does (exact, else case-insensitive)."""
    if key in mapping:
        return mapping[key]
    folded = key.casefold()
    for candidate, value in mapping.items():
        if isinstance(candidate, str) and candidate.casefold() == folded:
            return value
    return None


# -- typed reads of the fields the extender decides by. Each takes the JSON path
# of the object it reads from (`where`) and of the field, and builds the path
# only for the error message, so a well-formed object costs no string work.
# Missing or null is the empty value, as Go's decoder leaves it; any other type
# is an ExtenderInputError naming the field.


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for messages (never a Python type name).

    The engine's schema.kind_of, in JSON's words: an object (not a mapping), true or false.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = schema.kind_of(value)
    return "an object" if kind == "a mapping" else kind


def shown(text: str, limit: int = 64) -> str:
    """A string of the request quoted for a message, cut at `limit` characters (bodies can be megabytes)."""
    return json.dumps(text if len(text) <= limit else text[:limit] + "...")


def _wrong(where: str, field: str, expected: str, value: object) -> ExtenderInputError:
    return ExtenderInputError(f"{where}{field}: expected {expected}, got {json_type(value)}")


def object_at(value: Any, where: str, field: str = "") -> Mapping[str, Any]:
    """A JSON object (null or missing: an empty one)."""
    if isinstance(value, Mapping):
        return value
    if value is None:
        return {}
    raise _wrong(where, field, "an object", value)


def list_at(value: Any, where: str, field: str = "") -> list[Any]:
    """A JSON list (null or missing: an empty one)."""
    if isinstance(value, list):
        return value
    if value is None:
        return []
    raise _wrong(where, field, "a list", value)


def string_at(value: Any, where: str, field: str = "") -> str | None:
    """A JSON string (null or missing: None)."""
    if value is None or isinstance(value, str):
        return value
    raise _wrong(where, field, "a string", value)


def string_map_at(value: Any, where: str, field: str = "") -> Mapping[str, str]:
    """A JSON object of strings, as labels and annotations are (null or missing: an empty one)."""
    mapping = object_at(value, where, field)
    for key, item in mapping.items():
        if not isinstance(item, str):
            raise _wrong(where, f"{field}[{shown(key)}]", "a string", item)
    return mapping


def quantity_at(value: Any, where: str, field: str) -> Decimal:
    """A Kubernetes quantity (a string such as `2` or `16Gi`, or a number), finite and within int64.

    Go's resource.Quantity reads both forms and kube-scheduler uses its int64
    Value(); anything beyond that cannot come from it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _wrong(where, field, "a quantity (a string such as \"2\", or a number)", value)
    try:
        amount = parse_quantity(value)
    except (ValueError, ArithmeticError):
        raise ExtenderInputError(
            f"{where}{field}: {shown(str(value))} is not a Kubernetes quantity"
        ) from None
    if not amount.is_finite() or amount > MAX_QUANTITY:
        raise ExtenderInputError(f"{where}{field}: {shown(str(value))} is out of range (at most {MAX_QUANTITY})")
    return amount


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
    cpu_demand: int = 0  # millicores, from the pod contract's CPU demand annotation (0: none)


def _container_gpus(container: Any, where: str, at: str) -> int:
    """GPUs one container asks for (devices): the larger of its request and its limit."""
    resources = object_at(field_of(object_at(container, where, at), "resources"), where, f"{at}.resources")
    amount = 0
    for kind in ("requests", "limits"):
        kind_at = f"{at}.resources.{kind}"
        value = object_at(field_of(resources, kind), where, kind_at).get(GPU_RESOURCE)
        if value is not None:
            amount = max(amount, math.ceil(quantity_at(value, where, f"{kind_at}[{shown(GPU_RESOURCE)}]")))
    return amount


def pod_gpus(spec: Mapping[str, Any], where: str = "Pod.spec") -> int:
    """GPUs a pod needs (devices): the sum over containers, or the largest init container."""
    containers = list_at(field_of(spec, "containers"), where, ".containers")
    regular = sum(_container_gpus(c, where, f".containers[{i}]") for i, c in enumerate(containers))
    init = list_at(field_of(spec, "initContainers"), where, ".initContainers")
    init_max = max((_container_gpus(c, where, f".initContainers[{i}]") for i, c in enumerate(init)), default=0)
    return max(regular, init_max)


def _tolerates_interruption(spec: Mapping[str, Any], annotations: Mapping[str, str], where: str) -> bool:
    if annotations.get(INTERRUPTIBLE_ANNOTATION, "").lower() == "true":
        return True
    for index, item in enumerate(list_at(field_of(spec, "tolerations"), where, ".tolerations")):
        toleration = object_at(item, where, f".tolerations[{index}]")
        key = string_at(field_of(toleration, "key"), where, f".tolerations[{index}].key") or ""
        operator = string_at(field_of(toleration, "operator"), where, f".tolerations[{index}].operator")
        if key in SPOT_LABELS or (not key and operator == "Exists"):
            return True
    return False


def pod_facts(pod: Mapping[str, Any], where: str = "Pod") -> PodFacts:
    """Read a Pod object (API JSON, camelCase) into PodFacts; `where` is its JSON path for error messages."""
    metadata = object_at(field_of(pod, "metadata"), where, ".metadata")
    spec = object_at(field_of(pod, "spec"), where, ".spec")
    status = object_at(field_of(pod, "status"), where, ".status")
    meta_at = f"{where}.metadata"
    labels = string_map_at(field_of(metadata, "labels"), meta_at, ".labels")
    annotations = string_map_at(field_of(metadata, "annotations"), meta_at, ".annotations")
    namespace = string_at(field_of(metadata, "namespace"), meta_at, ".namespace") or "default"
    name = (
        string_at(field_of(metadata, "name"), meta_at, ".name")
        or string_at(field_of(metadata, "generateName"), meta_at, ".generateName")
        or ""
    )
    spec_at = f"{where}.spec"
    raw_type = labels.get(TYPE_LABEL)
    type_label = raw_type.lower() if raw_type else None
    app = labels.get(APP_LABEL)
    return PodFacts(
        key=f"{namespace}/{name}",
        node_name=string_at(field_of(spec, "nodeName"), spec_at, ".nodeName") or None,
        scheduler_name=string_at(field_of(spec, "schedulerName"), spec_at, ".schedulerName") or None,
        type_label=type_label,
        profile=pod_profile(annotations, labels),
        app_key=f"{namespace}/{app}" if app else None,
        gpus=pod_gpus(spec, spec_at),
        interruptible=_tolerates_interruption(spec, annotations, spec_at),
        terminal=string_at(field_of(status, "phase"), where, ".status.phase") in TERMINAL_PHASES,
        cpu_demand=pod_cpu_demand(annotations),
    )


@dataclass(frozen=True)
class NodeFacts:
    """The parts of a Node the extender decides by."""

    name: str
    gpu_capacity: int  # devices in status.capacity
    gpu_memory_bytes: int | None  # from GPU_MEMORY_LABEL
    zone: str | None
    spot: bool
    # status.allocatable's cpu in millicores (None when it has none): what CPU time-sharing divides.
    cpu_millicores: int | None = None
    # Every label, for the group of the policy's `sharing` (compared and hashed by name and the rest only).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)


def gpu_memory_bytes(value: str | None) -> int | None:
    """Parse the GPU memory label: a quantity (`16Gi`) or a bare number of MiB (`16384`, as NVIDIA's labels).

    None when the label is missing or no sensible size (not a quantity, not
    positive, beyond int64 such as `1e400`): any string is a valid label value,
    so a strange one leaves the node without a known GPU memory, never fails
    a request.
    """
    if not value:
        return None
    try:
        amount = Decimal(value) * MIB if value.isascii() and value.isdigit() else parse_quantity(value)
    except (ValueError, ArithmeticError):
        return None
    if not amount.is_finite() or amount <= 0 or amount > MAX_QUANTITY:
        return None
    return math.ceil(amount)


def node_facts(node: Mapping[str, Any], where: str = "Node") -> NodeFacts:
    """Read a Node object (API JSON, camelCase) into NodeFacts; `where` is its JSON path for error messages."""
    metadata = object_at(field_of(node, "metadata"), where, ".metadata")
    status = object_at(field_of(node, "status"), where, ".status")
    labels = string_map_at(field_of(metadata, "labels"), where, ".metadata.labels")
    capacity = object_at(field_of(status, "capacity"), where, ".status.capacity")
    allocatable = object_at(field_of(status, "allocatable"), where, ".status.allocatable")
    raw_cpu = allocatable.get("cpu")
    cpu = None if raw_cpu is None else math.floor(quantity_at(raw_cpu, where, ".status.allocatable.cpu") * 1000)
    raw_gpus = capacity.get(GPU_RESOURCE)
    gpus = 0 if raw_gpus is None else math.floor(
        quantity_at(raw_gpus, where, f".status.capacity[{shown(GPU_RESOURCE)}]")
    )
    return NodeFacts(
        name=string_at(field_of(metadata, "name"), where, ".metadata.name") or "",
        gpu_capacity=gpus,
        gpu_memory_bytes=gpu_memory_bytes(labels.get(GPU_MEMORY_LABEL)),
        zone=labels.get(ZONE_LABEL) or None,
        spot=any(labels.get(key, "").lower() == value for key, value in SPOT_LABELS.items()),
        cpu_millicores=cpu,
        labels=dict(labels),
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
        # CPU time-sharing (timesharing.py): per node, its pods with a profile or a CPU demand (an unprofiled
        # pod presses on nothing); and how many pods declare a demand (none: time-sharing changes no score).
        self._loads: dict[str, NodeLoad] = {}
        self.demanding = 0

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
        if facts.profile is not None or facts.cpu_demand:
            load = self._loads.setdefault(node, NodeLoad())
            load.add(facts.profile or NO_PRESSURE, facts.cpu_demand, sign)
            if not load.kinds:
                del self._loads[node]
        if facts.cpu_demand:
            self.demanding += sign
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
        self._loads.clear()
        self.demanding = 0

    def interference(self, profile: Profile, node: str) -> float:
        """Interference (score) a pod of this profile would have with the pods on `node`."""
        sums = self._profile_sums.get(node)
        return dot(profile, sums) if sums is not None else 0.0

    def interference_many(self, profile: Profile, nodes: Iterable[str]) -> list[float]:
        """`interference(profile, node)` for each node, in order: the prioritize hot path.

        The same sums in the same order as `dot` (0 + p0*s0 + p1*s1 + ...), so
        the same floats, without a generator per node.
        """
        if len(profile) != len(PRESSURE_DIMENSIONS):
            return [self.interference(profile, node) for node in nodes]
        p0, p1, p2, p3, p4 = profile
        sums = self._profile_sums
        zero = (0.0, 0.0, 0.0, 0.0, 0.0)
        return [
            0.0 + p0 * s[0] + p1 * s[1] + p2 * s[2] + p3 * s[3] + p4 * s[4]
            for s in (sums.get(node, zero) for node in nodes)
        ]

    def group_loads(self, group_of: Callable[[str], str | None]) -> dict[str, list[float]]:
        """The sum of the profiles per group of nodes (`group_of` a node's group, None: alone, left out).

        O(nodes holding profiled pods): what the cross-node term of `sharing` needs once per decision.
        """
        loads: dict[str, list[float]] = {}
        for node, sums in self._profile_sums.items():
            group = group_of(node)
            if group is None:
                continue
            total = loads.setdefault(group, [0.0] * len(PRESSURE_DIMENSIONS))
            for i, value in enumerate(sums):
                total[i] += value
        return loads

    def node_load(self, node: str) -> Sequence[float]:
        """The sum of the profiles on `node` (zeros when none)."""
        return self._profile_sums.get(node) or (0.0,) * len(PRESSURE_DIMENSIONS)

    def load(self, node: str) -> NodeLoad:
        """The node's pods as CPU time-sharing counts them (an empty NodeLoad when none); not to be changed."""
        return self._loads.get(node) or NodeLoad()

    def loaded_nodes(self) -> Iterable[str]:
        """The nodes holding a pod with a profile or a CPU demand."""
        return self._loads.keys()

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

"""Decisions of the scheduler extender: `filter` and `prioritize` over plain dicts.

kube-scheduler calls an extender over HTTP with the types of
`k8s.io/kube-scheduler/extender/v1`. Those Go structs have no json tags, so the
keys on the wire are the Go field names (`Pod`, `Nodes`, `NodeNames`, ...), and
Go's decoder matches them case-insensitively; the Pod and Node objects inside
use the usual camelCase API field names. This module turns such a body into
decisions, with no HTTP and no Kubernetes client in it, so the tests and the
benchmark call it directly and the service (`interference_extender/`) is a thin
shell around it.

Interference is the placement engine's (`interference.dot` over the profiles of
`interference.profile_for_type`): the interference of a pod with a node is the
dot product of its profile with the sum of the profiles of the pods already
there, which equals the sum of the pairwise scores because `dot` is linear.

Units: scores are kube-scheduler extender priorities, integers from
MIN_EXTENDER_PRIORITY to MAX_EXTENDER_PRIORITY; GPU counts are devices; GPU
memory is bytes; interference is the engine's unitless score.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import PlacementError
from .interference import PRESSURE_DIMENSIONS, TYPE_PROFILES, Profile, dot, profile_for_type, profile_from_mapping
from .model import GPU_RESOURCE, parse_quantity

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10

# Labels and annotations the decisions read. The type label is the one our
# Deployments carry on their pod template (see the project contracts).
TYPE_LABEL = "interference.orchestrator/type"
PROFILE_ANNOTATION = "interference.orchestrator/profile"
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
# The profile name of the second scheduler that opted-in apps use.
DEFAULT_SCHEDULER_NAME = "interference-scheduler"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class ExtenderInputError(PlacementError):
    """The request body is not an ExtenderArgs; the message says which field is wrong."""


class ExtenderConfigError(PlacementError):
    """The extender's policy (weights, hard rules) is invalid."""


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


# ---------------------------------------------------------------------------
# Policy


@dataclass(frozen=True)
class ScoreWeights:
    """Weight of each prioritize component (>= 0; 0 switches a component off)."""

    interference: float = 3.0
    gpu_memory: float = 1.0
    spot: float = 1.0
    zone_spread: float = 1.0


@dataclass(frozen=True)
class ExtenderPolicy:
    """What the extender decides by: score weights and the hard co-location rule.

    `forbidden_pairs` holds unordered pairs of pod types (values of TYPE_LABEL,
    lower case) that must never share a node: {"memory"} alone means two
    memory pods, {"cpu", "memory"} a cpu pod next to a memory pod.
    """

    weights: ScoreWeights = field(default_factory=ScoreWeights)
    forbidden_pairs: frozenset[frozenset[str]] = frozenset()
    scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER_NAME})

    def decides_for(self, pod: PodFacts) -> bool:
        """True when the pod is scheduled by one of `scheduler_names` (empty: every pod).

        Extenders in a KubeSchedulerConfiguration serve every profile of that
        scheduler; pods of the other profiles pass through untouched.
        """
        return not self.scheduler_names or not pod.scheduler_name or pod.scheduler_name in self.scheduler_names


def policy_from_mapping(data: object) -> ExtenderPolicy:
    """Validate the policy part of the extender's config file.

    Shape: {weights: {interference, gpu_memory, spot, zone_spread}: numbers >= 0,
    forbidden_pairs: [[type, type], ...], scheduler_names: [name, ...]}; every
    key is optional.
    """
    if data is None:
        return ExtenderPolicy()
    if not isinstance(data, Mapping):
        raise ExtenderConfigError(f"policy must be a mapping, got {type(data).__name__}")
    unknown = set(data) - {"weights", "forbidden_pairs", "scheduler_names"}
    if unknown:
        raise ExtenderConfigError(f"unknown policy keys: {', '.join(sorted(map(str, unknown)))}")
    raw_weights = data.get("weights") or {}
    if not isinstance(raw_weights, Mapping):
        raise ExtenderConfigError("weights must be a mapping of component to number")
    defaults = ScoreWeights()
    values: dict[str, float] = {}
    for name in ("interference", "gpu_memory", "spot", "zone_spread"):
        value = raw_weights.get(name, getattr(defaults, name))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
            raise ExtenderConfigError(f"weights.{name} must be a number >= 0, got {value!r}")
        values[name] = float(value)
    unknown = set(raw_weights) - set(values)
    if unknown:
        raise ExtenderConfigError(f"unknown weights: {', '.join(sorted(map(str, unknown)))}")
    raw_pairs = data.get("forbidden_pairs") or []
    if not isinstance(raw_pairs, Sequence) or isinstance(raw_pairs, (str, bytes)):
        raise ExtenderConfigError("forbidden_pairs must be a list of [type, type] pairs")
    pairs = set()
    for index, pair in enumerate(raw_pairs):
        if (
            not isinstance(pair, Sequence)
            or isinstance(pair, (str, bytes))
            or len(pair) != 2
            or not all(isinstance(t, str) and t for t in pair)
        ):
            raise ExtenderConfigError(f"forbidden_pairs[{index}] must be a pair of type names, got {pair!r}")
        pairs.add(frozenset(t.lower() for t in pair))
    names = data.get("scheduler_names", [DEFAULT_SCHEDULER_NAME])
    if names is None:
        names = []
    if not isinstance(names, Sequence) or isinstance(names, (str, bytes)) or not all(
        isinstance(n, str) and n for n in names
    ):
        raise ExtenderConfigError(f"scheduler_names must be a list of scheduler names, got {names!r}")
    return ExtenderPolicy(
        weights=ScoreWeights(**values), forbidden_pairs=frozenset(pairs), scheduler_names=frozenset(names)
    )


# ---------------------------------------------------------------------------
# What the decisions need to know about pods and nodes


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


def _pod_profile(type_label: str | None, annotations: Mapping[str, str]) -> Profile | None:
    raw = annotations.get(PROFILE_ANNOTATION)
    if raw:
        try:
            mapping = json.loads(raw)
        except ValueError:
            mapping = None
        if isinstance(mapping, Mapping) and all(
            k in PRESSURE_DIMENSIONS and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
            for k, v in mapping.items()
        ):
            return profile_from_mapping(dict(mapping))
    if type_label in TYPE_PROFILES:
        return profile_for_type(type_label)
    return None


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
        profile=_pod_profile(type_label, annotations),
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


# ---------------------------------------------------------------------------
# The request


@dataclass
class ExtenderArgs:
    """kube-scheduler's ExtenderArgs: the pod and its candidate nodes.

    Exactly one of `nodes` (full Node objects, nodeCacheCapable: false) and
    `node_names` (nodeCacheCapable: true) is set.
    """

    pod: Mapping[str, Any]
    nodes: list[Mapping[str, Any]] | None
    node_names: list[str] | None

    @property
    def node_cache_capable(self) -> bool:
        """True when the scheduler sent names only (the extender knows the nodes)."""
        return self.node_names is not None


def parse_extender_args(body: object) -> ExtenderArgs:
    """Validate a decoded request body as ExtenderArgs {Pod, Nodes, NodeNames}."""
    if not isinstance(body, Mapping):
        raise ExtenderInputError(f"ExtenderArgs must be a JSON object, got {type(body).__name__}")
    pod = field_of(body, "Pod")
    if not isinstance(pod, Mapping):
        raise ExtenderInputError("ExtenderArgs.Pod must be a Pod object")
    raw_names = field_of(body, "NodeNames")
    raw_nodes = field_of(body, "Nodes")
    if raw_names is not None:
        if not isinstance(raw_names, list) or not all(isinstance(n, str) for n in raw_names):
            raise ExtenderInputError("ExtenderArgs.NodeNames must be a list of node names")
        return ExtenderArgs(pod=pod, nodes=None, node_names=raw_names)
    if raw_nodes is None:
        raise ExtenderInputError("ExtenderArgs has neither Nodes nor NodeNames")
    if not isinstance(raw_nodes, Mapping):
        raise ExtenderInputError("ExtenderArgs.Nodes must be a NodeList object")
    items = field_of(raw_nodes, "items")
    if items is None:
        items = []  # Go encodes an empty NodeList's items as null
    if not isinstance(items, list) or not all(isinstance(n, Mapping) for n in items):
        raise ExtenderInputError("ExtenderArgs.Nodes.items must be a list of Node objects")
    return ExtenderArgs(pod=pod, nodes=items, node_names=None)


def _candidates(
    args: ExtenderArgs, known_nodes: Mapping[str, NodeFacts]
) -> list[tuple[str, NodeFacts | None, Mapping[str, Any] | None]]:
    """(name, facts or None when unknown, the Node object sent) per candidate, in request order."""
    if args.node_names is not None:
        return [(name, known_nodes.get(name), None) for name in args.node_names]
    result: list[tuple[str, NodeFacts | None, Mapping[str, Any] | None]] = []
    for node in args.nodes or []:
        facts = node_facts(node)
        result.append((facts.name, facts, node))
    return result


UNKNOWN_NODE_REASON = "node {name} is not in the extender's view of the cluster (not watched yet, or deleted)"


# ---------------------------------------------------------------------------
# Filter


def forbidden_neighbour(pod_type: str | None, types_on_node: Mapping[str, int], policy: ExtenderPolicy) -> str | None:
    """The type already on the node that the hard rule forbids next to `pod_type`, or None."""
    if not pod_type or not policy.forbidden_pairs:
        return None
    for other in sorted(types_on_node):
        if types_on_node[other] > 0 and frozenset((pod_type, other)) in policy.forbidden_pairs:
            return other
    return None


def reject_reason(
    pod: PodFacts, name: str, facts: NodeFacts | None, pods: PodIndex, policy: ExtenderPolicy
) -> tuple[str, bool] | None:
    """Why `pod` may not run on node `name`, and whether preemption could change that; None if it may."""
    if facts is None:
        return UNKNOWN_NODE_REASON.format(name=name), True
    if pod.gpus > 0 and facts.gpu_capacity <= 0:
        return f"pod {pod.key} needs {pod.gpus} {GPU_RESOURCE}, node {name} has no {GPU_RESOURCE} capacity", False
    other = forbidden_neighbour(pod.type_label, pods.types_on(name), policy)
    if other is not None:
        return (
            f"pod {pod.key} of type {pod.type_label} may not share node {name} with pods of type {other} "
            "(forbidden_pairs rule)"
        ), True
    return None


def filter_nodes(
    args: ExtenderArgs, pods: PodIndex, known_nodes: Mapping[str, NodeFacts], policy: ExtenderPolicy
) -> dict[str, Any]:
    """Answer a filter call: an ExtenderFilterResult with a reason per failed node.

    Failures that preemption cannot fix (no GPU on the node) go to
    FailedAndUnresolvableNodes; the rest (a forbidden neighbour, which evicting
    it would fix; a node the extender does not know yet) to FailedNodes.
    """
    pod = pod_facts(args.pod)
    passed_names: list[str] = []
    passed_nodes: list[Mapping[str, Any]] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    ours = policy.decides_for(pod)
    for name, facts, node in _candidates(args, known_nodes):
        rejection = reject_reason(pod, name, facts, pods, policy) if ours else None
        if rejection is not None:
            reason, resolvable = rejection
            (failed if resolvable else unresolvable)[name] = reason
            continue
        passed_names.append(name)
        if node is not None:
            passed_nodes.append(node)
    return {
        "Nodes": None if args.node_cache_capable else {"metadata": {}, "items": passed_nodes},
        "NodeNames": passed_names if args.node_cache_capable else None,
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }


# ---------------------------------------------------------------------------
# Prioritize


def spread_scores(values: Sequence[float], higher_is_better: bool) -> list[float]:
    """Map values to MIN..MAX_EXTENDER_PRIORITY linearly, best value -> MAX (all equal -> MAX)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-9:
        return [float(MAX_EXTENDER_PRIORITY)] * len(values)
    span = high - low
    if higher_is_better:
        return [MAX_EXTENDER_PRIORITY * (v - low) / span for v in values]
    return [MAX_EXTENDER_PRIORITY * (high - v) / span for v in values]


def _zone_counts(app_key: str, pods: PodIndex, zone_of: Mapping[str, str | None]) -> Counter[str | None]:
    counts: Counter[str | None] = Counter()
    for node, count in pods.app_nodes(app_key).items():
        counts[zone_of.get(node)] += count
    return counts


def score_components(
    args: ExtenderArgs, pods: PodIndex, known_nodes: Mapping[str, NodeFacts], policy: ExtenderPolicy
) -> tuple[list[str], dict[str, list[float]]]:
    """Candidate names and, per applicable component, a 0..10 score per candidate (floats).

    A component applies when it can tell nodes apart for this pod: interference
    when the pod has a profile, GPU memory for GPU pods, spot for pods that
    tolerate interruption, zone spread for pods of an app when nodes have zones.
    Unknown nodes (nodeCacheCapable mode) score the minimum in every component.
    """
    pod = pod_facts(args.pod)
    candidates = _candidates(args, known_nodes)
    names = [name for name, _, _ in candidates]
    known = [facts is not None for _, facts, _ in candidates]
    weights = policy.weights
    components: dict[str, list[float]] = {}
    if not policy.decides_for(pod):
        return names, components

    def known_only(values: list[float], higher_is_better: bool) -> list[float]:
        kept = [v for v, ok in zip(values, known, strict=True) if ok]
        scored = iter(spread_scores(kept, higher_is_better))
        return [next(scored) if ok else float(MIN_EXTENDER_PRIORITY) for ok in known]

    if weights.interference > 0 and pod.profile is not None:
        profile = pod.profile
        components["interference"] = known_only([pods.interference(profile, name) for name in names], False)
    if weights.gpu_memory > 0 and pod.gpus > 0:
        memory = [float((facts.gpu_memory_bytes or 0) if facts else 0) for _, facts, _ in candidates]
        if any(memory):
            components["gpu_memory"] = known_only(memory, True)
    if weights.spot > 0 and pod.interruptible:
        spot = [1.0 if facts is not None and facts.spot else 0.0 for _, facts, _ in candidates]
        components["spot"] = known_only(spot, True)
    if weights.zone_spread > 0 and pod.app_key is not None:
        zone_of: dict[str, str | None] = {name: facts.zone for name, facts in known_nodes.items()}
        zone_of.update({name: facts.zone for name, facts, _ in candidates if facts is not None})
        if any(zone_of.get(name) for name in names):
            counts = _zone_counts(pod.app_key, pods, zone_of)
            components["zone_spread"] = known_only([float(counts[zone_of.get(name)]) for name in names], False)
    return names, components


def prioritize_nodes(
    args: ExtenderArgs, pods: PodIndex, known_nodes: Mapping[str, NodeFacts], policy: ExtenderPolicy
) -> list[dict[str, Any]]:
    """Answer a prioritize call: a HostPriorityList [{Host, Score}], Score an integer 0..10.

    The score is the weighted mean of the applicable components, rounded; a
    pod no component applies to scores MIN on every node (no preference).
    """
    names, components = score_components(args, pods, known_nodes, policy)
    weights = {name: getattr(policy.weights, name) for name in components}
    total_weight = sum(weights.values())
    result = []
    for index, name in enumerate(names):
        if total_weight <= 0:
            score = MIN_EXTENDER_PRIORITY
        else:
            mean = sum(weights[c] * values[index] for c, values in components.items()) / total_weight
            score = max(MIN_EXTENDER_PRIORITY, min(MAX_EXTENDER_PRIORITY, round(mean)))
        result.append({"Host": name, "Score": score})
    return result


def known_nodes_from(objects: Iterable[Mapping[str, Any]]) -> dict[str, NodeFacts]:
    """NodeFacts by name for a list of Node objects (a NodeList's items)."""
    facts = (node_facts(node) for node in objects)
    return {f.name: f for f in facts if f.name}

"""The extender's decisions: `filter` and `prioritize` over kube-scheduler's request bodies.

kube-scheduler calls an extender over HTTP with the types of
`k8s.io/kube-scheduler/extender/v1`. Those Go structs have no json tags, so the
keys on the wire are the Go field names (`Pod`, `Nodes`, `NodeNames`, ...), and
Go's decoder matches them case-insensitively; the Pod and Node objects inside
use the usual camelCase API field names. This module turns such a body into
decisions, with no HTTP and no Kubernetes client in it, so the tests and the
benchmark call it directly and the service (`service.py`) is a thin shell
around it.

Interference is the placement engine's (`interference.dot` over the pods'
profiles, see facts.py): the interference of a pod with a node is the dot
product of its profile with the sum of the profiles of the pods already there,
which equals the sum of the pairwise scores because `dot` is linear.

Units: scores are kube-scheduler extender priorities, integers from
MIN_EXTENDER_PRIORITY to MAX_EXTENDER_PRIORITY.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.interference import Profile
from ansible_collections.interference.orchestrator.plugins.module_utils.model import GPU_RESOURCE
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import Sharing, cross_node_added
from ansible_collections.interference.orchestrator.plugins.module_utils.timesharing import NodeLoad, added_cost

from .facts import (
    ExtenderInputError,
    NodeFacts,
    PodFacts,
    PodIndex,
    field_of,
    json_type,
    list_at,
    node_facts,
    pod_facts,
)
from .policy import ExtenderPolicy

__all__ = ["ExtenderInputError", "filter_nodes", "parse_extender_args", "prioritize_nodes"]

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


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

    @cached_property
    def facts(self) -> PodFacts:
        """The pod's facts, read once per request (the decision and the service's bind memory share them)."""
        return pod_facts(self.pod)

    @property
    def pod_uid(self) -> str | None:
        """The pod's metadata.uid (kube-scheduler's bind call names the pod by it too), None when absent."""
        # Read before `facts` checks the pod: metadata of the wrong type is left
        # to that check (a 400 naming it), not a crash here.
        metadata = field_of(self.pod, "metadata")
        uid = field_of(metadata, "uid") if isinstance(metadata, Mapping) else None
        return uid if isinstance(uid, str) and uid else None


def parse_extender_args(body: object) -> ExtenderArgs:
    """Validate a decoded request body as ExtenderArgs {Pod, Nodes, NodeNames}.

    Only the envelope here; the fields of the Pod and the Nodes that the
    decisions read are checked as they are read (facts.py), each error naming
    its JSON path (`Pod.spec.schedulerName: expected a string, got a list`).
    """
    if not isinstance(body, Mapping):
        raise ExtenderInputError(f"ExtenderArgs: expected a JSON object, got {json_type(body)}")
    pod = field_of(body, "Pod")
    if not isinstance(pod, Mapping):
        raise ExtenderInputError(f"Pod: expected a Pod object, got {json_type(pod)}")
    raw_names = field_of(body, "NodeNames")
    raw_nodes = field_of(body, "Nodes")
    if raw_names is not None:
        names = list_at(raw_names, "NodeNames")
        for index, name in enumerate(names):
            if not isinstance(name, str):
                raise ExtenderInputError(f"NodeNames[{index}]: expected a node name, got {json_type(name)}")
        return ExtenderArgs(pod=pod, nodes=None, node_names=names)
    if raw_nodes is None:
        raise ExtenderInputError("ExtenderArgs has neither Nodes nor NodeNames")
    if not isinstance(raw_nodes, Mapping):
        raise ExtenderInputError(f"Nodes: expected a NodeList object, got {json_type(raw_nodes)}")
    # Go encodes an empty NodeList's items as null.
    items = list_at(field_of(raw_nodes, "items"), "Nodes", ".items")
    for index, node in enumerate(items):
        if not isinstance(node, Mapping):
            raise ExtenderInputError(f"Nodes.items[{index}]: expected a Node object, got {json_type(node)}")
    return ExtenderArgs(pod=pod, nodes=items, node_names=None)


@dataclass(frozen=True)
class BindingArgs:
    """kube-scheduler's ExtenderBindingArgs: bind pod `namespace/name` (of `uid`) to `node`."""

    name: str
    namespace: str
    uid: str
    node: str


def parse_binding_args(body: object) -> BindingArgs:
    """Validate a decoded bind request body as ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node}."""
    if not isinstance(body, Mapping):
        raise ExtenderInputError(f"ExtenderBindingArgs: expected a JSON object, got {json_type(body)}")
    values: dict[str, str] = {}
    for key in ("PodName", "PodNamespace", "Node"):
        value = field_of(body, key)
        if not isinstance(value, str) or not value:
            raise ExtenderInputError(f"ExtenderBindingArgs.{key}: expected a non-empty string, got {json_type(value)}")
        values[key] = value
    uid = field_of(body, "PodUID")
    # kube-scheduler always names the UID; without it a pod deleted and created
    # again under the same name could be bound in place of the one scheduled.
    if not isinstance(uid, str) or not uid:
        raise ExtenderInputError(
            "ExtenderBindingArgs.PodUID: expected the pod's UID (a non-empty string), got "
            + ("an empty string" if uid == "" else json_type(uid))
        )
    return BindingArgs(name=values["PodName"], namespace=values["PodNamespace"], uid=uid, node=values["Node"])


def binding_refusal(pod: Mapping[str, Any], args: BindingArgs, scheduler_names: frozenset[str]) -> str | None:
    """Why the extender must not bind `pod` (the object the API server holds now) as `args` asks, or None.

    Only a pod of one of `scheduler_names` (the policy's, which the extender
    decides for), of the UID named and not bound yet is bound: the extender's
    pods/binding permission must not bind any pod for any caller.
    """
    where = f"pod {args.namespace}/{args.name}"
    raw_metadata, raw_spec = pod.get("metadata"), pod.get("spec")
    metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
    spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}
    if metadata.get("uid") != args.uid:
        return f"{where} has UID {metadata.get('uid')}, not {args.uid} as the bind call says: not bound"
    if spec.get("nodeName"):
        return f"{where} is already bound to node {spec['nodeName']}: not bound again"
    scheduler = spec.get("schedulerName") or "default-scheduler"
    if scheduler not in scheduler_names:
        names = ", ".join(sorted(scheduler_names)) or "none (scheduler_names is empty)"
        return f"{where} is scheduled by {scheduler}, not by this extender's scheduler ({names}): not bound"
    return None


def _candidates(
    args: ExtenderArgs, known_nodes: Mapping[str, NodeFacts]
) -> list[tuple[str, NodeFacts | None, Mapping[str, Any] | None]]:
    """(name, facts or None when unknown, the Node object sent) per candidate, in request order."""
    if args.node_names is not None:
        return [(name, known_nodes.get(name), None) for name in args.node_names]
    result: list[tuple[str, NodeFacts | None, Mapping[str, Any] | None]] = []
    for index, node in enumerate(args.nodes or []):
        facts = node_facts(node, f"Nodes.items[{index}]")
        if not facts.name:
            raise ExtenderInputError(f"Nodes.items[{index}].metadata.name: expected a node name")
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
    pod = args.facts
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


def _zone_counts(app_key: str, pods: PodIndex, zone_of: Callable[[str], str | None]) -> Counter[str | None]:
    """The app's pod count per zone: O(nodes the app is on), not O(nodes of the cluster)."""
    counts: Counter[str | None] = Counter()
    for node, count in pods.app_nodes(app_key).items():
        counts[zone_of(node)] += count
    return counts


def added_interference(
    profile: Profile,
    candidates: Sequence[tuple[str, NodeFacts | None, Mapping[str, Any] | None]],
    pods: PodIndex,
    known_nodes: Mapping[str, NodeFacts],
    sharing: Sharing,
) -> list[float]:
    """The interference a pod of this profile adds on each candidate: with its pods, and across its group.

    The same-node term is the engine's dot product with the node's pods. With
    `sharing`, a candidate whose label puts it in a group (a host) adds
    sharing.cross_node_added with the pods on the group's other nodes, whose
    labels the view knows (or the request sends); a node without the label is
    alone. One pass over the nodes holding profiled pods per decision.
    """
    values = pods.interference_many(profile, [name for name, _, _ in candidates])
    if not sharing.active or sharing.label is None:
        return values
    label = sharing.label
    sent = {name: facts for name, facts, _ in candidates if facts is not None}

    def group_of(name: str) -> str | None:
        facts = sent.get(name) or known_nodes.get(name)
        return facts.labels.get(label) if facts is not None else None

    loads = pods.group_loads(group_of)
    for position, (name, _, _) in enumerate(candidates):
        group = group_of(name)
        if group is not None and group in loads:
            values[position] += cross_node_added(profile, pods.node_load(name), loads[group], sharing)
    return values


def added_time_shared(
    kind: tuple[Profile, int],
    candidates: Sequence[tuple[str, NodeFacts | None, Mapping[str, Any] | None]],
    pods: PodIndex,
    known_nodes: Mapping[str, NodeFacts],
    sharing: Sharing,
) -> list[float]:
    """What a pod of this kind (profile, CPU demand) adds to the time-shared score on each candidate.

    The engine's formula (timesharing.added_cost) over the view: each node's
    pods (PodIndex.load) on its allocatable CPUs, from the Node objects of the
    request or the view (unknown: never oversubscribed). With `sharing`, the
    sums of NodeLoad.weighted and .exposure per group, over the nodes holding
    pods, once per decision; a candidate passes its group's minus its own.
    With no node oversubscribed it is twice added_interference (each pair
    counts in both replicas' slowdowns), so the ranking is the same.
    """
    sent = {name: facts for name, facts, _ in candidates if facts is not None}

    def facts_of(name: str) -> NodeFacts | None:
        return sent.get(name) or known_nodes.get(name)

    loads: dict[str, NodeLoad] = {}

    def load_of(name: str) -> NodeLoad:
        # Once per node and decision: a node holding pods is read for its group's sums and as a candidate.
        if name not in loads:
            facts = facts_of(name)
            loads[name] = pods.load(name).with_cpus(facts.cpu_millicores if facts is not None else None)
        return loads[name]

    def group_of(name: str) -> str | None:
        facts = facts_of(name)
        return facts.labels.get(sharing.label) if facts is not None and sharing.label is not None else None

    width = len(kind[0])
    groups: dict[str, tuple[list[float], list[float]]] = {}
    if sharing.active:
        for name in pods.loaded_nodes():
            group = group_of(name)
            if group is None:
                continue
            load = load_of(name)
            weighted, exposure = groups.setdefault(group, ([0.0] * width, [0.0] * width))
            for dim, (w, e) in enumerate(zip(load.weighted(), load.exposure(), strict=True)):
                weighted[dim] += w
                exposure[dim] += e
    values = []
    for name, _, _ in candidates:
        load = load_of(name)
        group = group_of(name) if sharing.active else None
        others = None
        if group is not None:
            weighted, exposure = groups.get(group, ([0.0] * width, [0.0] * width))
            own_weighted, own_exposure = load.weighted(), load.exposure()
            others = (
                [g - o for g, o in zip(weighted, own_weighted, strict=True)],
                [g - o for g, o in zip(exposure, own_exposure, strict=True)],
            )
        values.append(added_cost(kind, load, sharing=sharing, others=others))
    return values


def score_components(
    args: ExtenderArgs, pods: PodIndex, known_nodes: Mapping[str, NodeFacts], policy: ExtenderPolicy
) -> tuple[list[str], dict[str, list[float]]]:
    """Candidate names and, per applicable component, a 0..10 score per candidate (floats).

    A component applies when it can tell nodes apart for this pod: interference
    when the pod has a profile, GPU memory for GPU pods, spot for pods that
    tolerate interruption, zone spread for pods of an app when nodes have zones.
    Unknown nodes (nodeCacheCapable mode) score the minimum in every component.
    """
    pod = args.facts
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
        # CPU time-sharing changes a score only where some pod declares a CPU demand (timesharing.active).
        if pod.cpu_demand or pods.demanding:
            added = added_time_shared(
                (pod.profile, pod.cpu_demand), candidates, pods, known_nodes, policy.sharing
            )
        else:
            added = added_interference(pod.profile, candidates, pods, known_nodes, policy.sharing)
        components["interference"] = known_only(added, False)
    if weights.gpu_memory > 0 and pod.gpus > 0:
        memory = [float((facts.gpu_memory_bytes or 0) if facts else 0) for _, facts, _ in candidates]
        if any(memory):
            components["gpu_memory"] = known_only(memory, True)
    if weights.spot > 0 and pod.interruptible:
        spot = [1.0 if facts is not None and facts.spot else 0.0 for _, facts, _ in candidates]
        components["spot"] = known_only(spot, True)
    if weights.zone_spread > 0 and pod.app_key is not None:
        # The Node objects of the request (full node list) win over the view's; only the
        # candidates and the nodes the app is on are looked up.
        sent = {name: facts.zone for name, facts, _ in candidates if facts is not None}

        def zone_of(name: str) -> str | None:
            if name in sent:
                return sent[name]
            facts = known_nodes.get(name)
            return facts.zone if facts is not None else None

        candidate_zones = [zone_of(name) for name in names]
        if any(candidate_zones):
            counts = _zone_counts(pod.app_key, pods, zone_of)
            components["zone_spread"] = known_only([float(counts[zone]) for zone in candidate_zones], False)
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
    if total_weight <= 0:
        return [{"Host": name, "Score": MIN_EXTENDER_PRIORITY} for name in names]
    # Component by component over all nodes (the same additions in the same
    # order as a sum per node, so the same floats), not a generator per node.
    totals = [0.0] * len(names)
    for component, values in components.items():
        weight = weights[component]
        totals = [total + weight * value for total, value in zip(totals, values, strict=True)]
    return [
        {"Host": name, "Score": max(MIN_EXTENDER_PRIORITY, min(MAX_EXTENDER_PRIORITY, round(total / total_weight)))}
        for name, total in zip(names, totals, strict=True)
    ]

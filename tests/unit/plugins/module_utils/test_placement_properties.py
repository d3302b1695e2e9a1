"""Property tests of the placement engine (hypothesis).

- constraints always hold;
- the plan is the exact optimum on every instance small enough to enumerate
  (up to 7 replicas on 4 nodes, with and without capacity limits);
- it is never worse than random placement;
- it is deterministic, and never below the lower bound.

Scores are computed here pair by pair (`pairwise_interference`), not with the
engine's `sum_interference`, so a bug in the engine's scoring cannot hide by
scoring the engine's plan and the brute-force optimum the same wrong way.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import UnschedulableError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import EPSILON
from ansible_collections.interference.orchestrator.plugins.module_utils.model import App, Node, parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PRESSURE = st.sampled_from([0, 0.25, 0.5, 1])
PROFILE = st.fixed_dictionaries(
    {},
    optional={"cpu": PRESSURE, "memory_bandwidth": PRESSURE, "llc": PRESSURE, "disk_io": PRESSURE},
).filter(bool)


@st.composite
def instances(draw: st.DrawFn, max_replicas: int = 8, max_nodes: int = 4, capacity: bool = True,
              one_hot: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    node_count = draw(st.integers(1, max_nodes))
    nodes = []
    for index in range(node_count):
        item: dict[str, Any] = {"name": f"n{index}", "labels": {"zone": draw(st.sampled_from(["a", "b"]))}}
        if capacity:
            item["allocatable"] = {
                "cpu": draw(st.sampled_from(["1", "2", "4"])),
                "memory": draw(st.sampled_from(["1Gi", "2Gi"])),
                "pods": str(draw(st.integers(1, 6))),
            }
            if draw(st.integers(0, 3)) == 0:
                item["taints"] = [{"key": "dedicated", "value": draw(st.sampled_from(["x", "y"])),
                                   "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))}]
            if draw(st.integers(0, 7)) == 0:
                item["ready"] = False
        nodes.append(item)
    apps: list[dict[str, Any]] = []
    replicas_left = draw(st.integers(1, max_replicas))
    while replicas_left:
        replicas = draw(st.integers(1, min(3, replicas_left)))
        replicas_left -= replicas
        item = {"name": f"app{len(apps)}", "image": "img", "replicas": replicas}
        if one_hot or draw(st.booleans()):
            item["type"] = draw(st.sampled_from(["cpu", "memory"]))
        else:
            item["profile"] = draw(PROFILE)
        if capacity and draw(st.booleans()):
            item["resources"] = {"requests": {"cpu": draw(st.sampled_from(["250m", "500m", "1"])),
                                              "memory": draw(st.sampled_from(["128Mi", "512Mi", "1Gi"]))}}
        if capacity and draw(st.integers(0, 5)) == 0:
            item["node_selector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
        if capacity and draw(st.integers(0, 2)) == 0:
            item["tolerations"] = [draw(st.sampled_from([
                {"key": "dedicated", "operator": "Exists"},
                {"key": "dedicated", "value": "x", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "y"},
                {"operator": "Exists", "effect": "NoExecute"},
            ]))]
        apps.append(item)
    return apps, nodes


def tolerated(app: App, key: str, value: str, effect: str) -> bool:
    """Whether one of the app's tolerations (key, operator, value, effect) tolerates the taint, per Kubernetes."""
    return any(
        (not t_effect or t_effect == effect) and (not t_key or t_key == key) and (op == "Exists" or t_value == value)
        for t_key, op, t_value, t_effect in app.tolerations
    )


def eligible(app: App, node: Node) -> bool:
    """Static eligibility, written independently of the engine."""
    if not node.ready:
        return False
    if app.pinned_node not in (None, node.name):
        return False
    blocking = [(key, value, effect) for key, value, effect in node.taints if effect != "PreferNoSchedule"]
    if any(not tolerated(app, key, value, effect) for key, value, effect in blocking):
        return False
    if any(node.labels.get(k) != v for k, v in app.node_selector):
        return False
    if app.gpus > node.gpus:
        return False
    if node.cpu_millicores is not None and app.cpu_millicores > node.cpu_millicores:
        return False
    if node.memory_bytes is not None and app.memory_bytes > node.memory_bytes:
        return False
    return node.pods is None or node.pods >= 1


def feasible(apps: list[App], nodes: list[Node], assignment: list[list[int]]) -> bool:
    """Do all hard constraints hold? (independent of the engine's bookkeeping)"""
    cpu = [0] * len(nodes)
    memory = [0] * len(nodes)
    pods = [0] * len(nodes)
    for app, replicas in zip(apps, assignment, strict=True):
        if len(replicas) != app.replicas:
            return False
        eligible_count = sum(eligible(app, node) for node in nodes)
        per_node_cap = max(1, math.ceil(app.replicas / max(1, eligible_count)))
        for node_index in set(replicas):
            if replicas.count(node_index) > per_node_cap:
                return False
        for node_index in replicas:
            if not eligible(app, nodes[node_index]):
                return False
            cpu[node_index] += app.cpu_millicores
            memory[node_index] += app.memory_bytes
            pods[node_index] += 1
    for index, node in enumerate(nodes):
        if node.cpu_millicores is not None and cpu[index] > node.cpu_millicores:
            return False
        if node.memory_bytes is not None and memory[index] > node.memory_bytes:
            return False
        if node.pods is not None and pods[index] > node.pods:
            return False
    return True


def pairwise_interference(apps: list[App], assignment: list[list[int]]) -> float:
    """Total interference, from the definition: per node, every pair of replicas, the products of their pressures."""
    residents: dict[int, list[tuple[float, ...]]] = {}
    for app, replicas in zip(apps, assignment, strict=True):
        for node_index in replicas:
            residents.setdefault(node_index, []).append(app.profile)
    total = 0.0
    for profiles in residents.values():
        for left, right in itertools.combinations(profiles, 2):
            total += sum(a * b for a, b in zip(left, right, strict=True))
    return total


def random_assignment(apps: list[App], node_count: int, seed: int) -> list[list[int]]:
    """Every replica on a node drawn at random among those its spread cap allows (no capacity):
    the valid placement a plan must never be worse than. (Ignoring the cap would
    let the baseline stack replicas the engine may not, and beat it unfairly.)"""
    rng = random.Random(seed)
    assignment = []
    for app in apps:
        cap = max(1, math.ceil(app.replicas / node_count))
        counts = [0] * node_count
        for _ in range(app.replicas):
            node_index = rng.choice([n for n in range(node_count) if counts[n] < cap])
            counts[node_index] += 1
        assignment.append(sorted(n for n in range(node_count) for _ in range(counts[n])))
    return assignment


def brute_force_optimum(
    apps: list[App], nodes: list[Node], score_of: Callable[[list[list[int]]], float] | None = None,
) -> float | None:
    """Least interference over every assignment of every replica (None if none is feasible).

    `score_of` scores an assignment (default: pairwise_interference).
    """
    replica_apps = [app.index for app in apps for _ in range(app.replicas)]
    best: float | None = None
    for choice in itertools.product(range(len(nodes)), repeat=len(replica_apps)):
        assignment: list[list[int]] = [[] for _ in apps]
        for app_index, node_index in zip(replica_apps, choice, strict=True):
            assignment[app_index].append(node_index)
        if feasible(apps, nodes, assignment):
            score = score_of(assignment) if score_of else pairwise_interference(apps, assignment)
            if best is None or score < best:
                best = score
    return best


# Example counts keep the unit tier within seconds (make unit); the engine's own search tests go further.
SLOW = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(instances(max_replicas=7, capacity=True))
def test_exact_optimum_with_capacity_limits(instance: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    raw_apps, raw_nodes = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    optimum = brute_force_optimum(apps, nodes)
    try:
        plan = place(raw_apps, raw_nodes)
    except UnschedulableError:
        assert optimum is None, "the engine gave up on a feasible instance"
        return
    assert optimum is not None
    assert feasible(apps, nodes, plan.assignment)
    assert abs(pairwise_interference(apps, plan.assignment) - optimum) <= 1e-6
    assert abs(plan.total_interference - optimum) <= 1e-6
    assert plan.proven_optimal


@SLOW
@given(instances(max_replicas=7, capacity=False))
def test_exact_optimum_without_capacity_limits(instance: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    raw_apps, raw_nodes = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    plan = place(raw_apps, raw_nodes)
    optimum = brute_force_optimum(apps, nodes)
    assert optimum is not None
    assert abs(pairwise_interference(apps, plan.assignment) - optimum) <= 1e-6
    assert abs(plan.total_interference - optimum) <= 1e-6
    assert plan.total_interference >= plan.lower_bound - 1e-6


@settings(max_examples=20, deadline=None)
@given(instances(max_replicas=60, max_nodes=12, capacity=True))
def test_constraints_hold_and_output_is_deterministic(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    raw_apps, raw_nodes = instance
    try:
        plan = place(raw_apps, raw_nodes)
    except UnschedulableError:
        return
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    assert feasible(apps, nodes, plan.assignment)
    assert plan.total_interference >= plan.lower_bound - 1e-6
    assert place(raw_apps, raw_nodes).assignment == plan.assignment


@settings(max_examples=25, deadline=None)
@given(instances(max_replicas=100, max_nodes=20, capacity=False), st.integers(0, 2**16))
def test_never_worse_than_random_placement(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]]], seed: int,
) -> None:
    raw_apps, raw_nodes = instance
    apps = parse_apps(raw_apps)
    plan = place(raw_apps, raw_nodes)
    baseline = random_assignment(apps, len(raw_nodes), seed)
    assert pairwise_interference(apps, plan.assignment) <= pairwise_interference(apps, baseline) + EPSILON


@settings(max_examples=40, deadline=None)
@given(instances(max_replicas=150, max_nodes=30, capacity=False, one_hot=True))
def test_one_hot_types_are_provably_optimal_when_capacity_does_not_bind(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    raw_apps, raw_nodes = instance
    for item in raw_apps:
        item.pop("node_selector", None)
    plan = place(raw_apps, raw_nodes)
    assert abs(plan.total_interference - plan.lower_bound) <= 1e-6
    assert plan.proven_optimal

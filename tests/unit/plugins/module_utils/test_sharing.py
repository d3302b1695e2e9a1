"""Interference across the nodes of one group (sharing.py): the score, the engine's optimum under it, the report.

Scores are computed here from the definition, pair of replicas by pair of
replicas (`shared_pairwise`), not with the engine's extended profiles, so a
bug in the extension cannot hide by scoring the engine's plan and the brute
force optimum the same wrong way.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import InputError, UnschedulableError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    PRESSURE_DIMENSIONS,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import App, Node, parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from ansible_collections.interference.orchestrator.plugins.module_utils.search import _Engine
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import parse_sharing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .test_placement_properties import brute_force_optimum, feasible, instances

HOST = "example.com/host"
SHARE = st.sampled_from([0.0, 0.25, 0.5, 1.0])


@st.composite
def shared_instances(
    draw: st.DrawFn, max_replicas: int = 7, max_nodes: int = 4, capacity: bool = True
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """An instance of test_placement_properties, its nodes spread over up to 2 hosts (some on none), and shares."""
    raw_apps, raw_nodes = draw(instances(max_replicas=max_replicas, max_nodes=max_nodes, capacity=capacity))
    for node in raw_nodes:
        host = draw(st.sampled_from(["h1", "h2", None]))
        if host is not None:
            node["labels"][HOST] = host
    pressures = {dim: draw(SHARE) for dim in draw(st.sets(st.sampled_from(PRESSURE_DIMENSIONS), max_size=3))}
    return raw_apps, raw_nodes, {"label": HOST, "pressures": pressures}


def shared_pairwise(apps: list[App], nodes: list[Node], assignment: list[list[int]], sharing: dict[str, Any]) -> float:
    """Total score from the definition: every pair of replicas, sum_r p_r q_r share_r(node, node)."""
    shares = [float(sharing["pressures"].get(dim, 0.0)) for dim in PRESSURE_DIMENSIONS]
    replicas = [(app.profile, n) for app, placed in zip(apps, assignment, strict=True) for n in placed]
    total = 0.0
    for (left, left_node), (right, right_node) in itertools.combinations(replicas, 2):
        left_host = nodes[left_node].labels.get(sharing["label"])
        right_host = nodes[right_node].labels.get(sharing["label"])
        for dim, (a, b) in enumerate(zip(left, right, strict=True)):
            if left_node == right_node:
                total += a * b
            elif left_host is not None and left_host == right_host:
                total += a * b * shares[dim]
    return total


SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SLOW
@given(shared_instances())
def test_the_plan_is_the_brute_force_optimum_under_the_shared_score(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    raw_apps, raw_nodes, sharing = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    optimum = brute_force_optimum(
        apps, nodes, lambda assignment: shared_pairwise(apps, nodes, assignment, sharing)
    )
    try:
        plan = place(raw_apps, raw_nodes, sharing=sharing)
    except UnschedulableError:
        assert optimum is None, "the engine gave up on a feasible instance"
        return
    assert optimum is not None
    assert feasible(apps, nodes, plan.assignment)
    assert shared_pairwise(apps, nodes, plan.assignment, sharing) == pytest.approx(optimum, abs=1e-6)
    assert plan.total_interference == pytest.approx(optimum, abs=1e-6)
    assert plan.lower_bound <= optimum + 1e-6
    assert plan.proven_optimal


@settings(max_examples=25, deadline=None)
@given(shared_instances(max_replicas=60, max_nodes=12))
def test_searched_plans_score_as_the_definition_says(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    """Past the exact search's size the annealing prices moves incrementally: its total is still the definition's."""
    raw_apps, raw_nodes, sharing = instance
    try:
        plan = place(raw_apps, raw_nodes, sharing=sharing)
    except UnschedulableError:
        return
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    assert feasible(apps, nodes, plan.assignment)
    score = shared_pairwise(apps, nodes, plan.assignment, sharing)
    assert plan.total_interference == pytest.approx(score, abs=1e-6)
    assert plan.total_interference >= plan.lower_bound - 1e-6
    assert place(raw_apps, raw_nodes, sharing=sharing).assignment == plan.assignment
    report = plan.report()
    same_node = sum(node["interference"] for node in report["nodes"])
    assert same_node + report.get("cross_node_interference", 0.0) == pytest.approx(score, abs=1e-5)


@settings(max_examples=30, deadline=None)
@given(shared_instances(max_replicas=60, max_nodes=12))
def test_zero_shares_change_no_plan(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    raw_apps, raw_nodes, sharing = instance
    zero = {"label": HOST, "pressures": dict.fromkeys(sharing["pressures"], 0)}
    try:
        plain = place(raw_apps, raw_nodes)
    except UnschedulableError:
        with pytest.raises(UnschedulableError):
            place(raw_apps, raw_nodes, sharing=zero)
        return
    shared = place(raw_apps, raw_nodes, sharing=zero)
    assert shared.assignment == plain.assignment
    assert shared.report() == plain.report()


def kind_like(memory_share: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The seed's four apps on two 1-CPU workers of one host."""
    apps = [
        {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
        {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
        {"name": "mbw", "image": "pts/mbw", "type": "memory"},
        {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
    ]
    nodes = [{"name": f"worker{i}", "labels": {HOST: "host-a"}, "allocatable": {"cpu": "1"}} for i in (1, 2)]
    return apps, nodes, {"label": HOST, "pressures": {"memory_bandwidth": memory_share}}


def test_memory_apps_on_two_workers_of_one_host_still_score_what_the_host_shares() -> None:
    apps, nodes, sharing = kind_like(0.8)
    plan = place(apps, nodes, sharing=sharing)
    report = plan.report()
    # Apart is still the best plan: together scores 1 + 1 (both pairs), apart 0.8 (the memory pair, across).
    assert report["total_interference"] == pytest.approx(0.8)
    assert report["lower_bound"] == pytest.approx(0.8)
    assert report["cross_node_interference"] == pytest.approx(0.8)
    assert report["cross_node_pairs"] == [
        {"group": "host-a", "nodes": ["worker1", "worker2"], "apps": ["mbw", "stressapptest"], "score": 0.8}
    ]
    assert report["sharing"] == {"label": HOST, "pressures": {"memory_bandwidth": 0.8}}
    assert report["pairs"] == []
    warning = plan.warning()
    assert warning is not None
    assert f"mbw and stressapptest share {HOST}=host-a across worker1, worker2" in warning
    # Without sharing the same plan scores 0, and the report has no cross-node keys.
    plain = place(apps, nodes).report()
    assert plain["total_interference"] == 0
    assert "cross_node_interference" not in plain


def test_a_host_of_its_own_is_chosen_over_another_node_of_the_same_host() -> None:
    """Two memory apps, hosts a (2 nodes) and b (1 node): apart on host a scores the share, b costs nothing."""
    apps = [{"name": f"m{i}", "image": "img", "type": "memory"} for i in range(2)]
    nodes: list[dict[str, Any]] = [
        {"name": "a1", "labels": {HOST: "a"}},
        {"name": "a2", "labels": {HOST: "a"}},
        {"name": "b1", "labels": {HOST: "b"}},
    ]
    sharing = {"label": HOST, "pressures": {"memory_bandwidth": 0.5}}
    plan = place(apps, nodes, sharing=sharing)
    hosts = sorted(nodes[node_index]["labels"][HOST] for replicas in plan.assignment for node_index in replicas)
    assert hosts == ["a", "b"]
    assert plan.total_interference == 0
    assert plan.proven_optimal
    # A node with no host label is in no group: nothing crosses to it either.
    del nodes[2]["labels"][HOST]
    assert place(apps, nodes, sharing=sharing).total_interference == 0


def test_a_full_share_makes_the_host_one_node_for_that_resource() -> None:
    """Share 1: eight memory replicas on 4 nodes of one host score all 28 pairs wherever they go."""
    apps = [{"name": "m", "image": "img", "type": "memory", "replicas": 8}]
    nodes = [{"name": f"n{i}", "labels": {HOST: "one"}} for i in range(4)]
    plan = place(apps, nodes, sharing={"label": HOST, "pressures": {"memory_bandwidth": 1}})
    assert plan.total_interference == pytest.approx(28)
    assert plan.lower_bound == pytest.approx(28)
    assert sorted(len([r for r in plan.assignment[0] if r == n]) for n in range(4)) == [2, 2, 2, 2]


def annealing_instance(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """200 mixed replicas on 3 hosts of 4 nodes each and one node alone, capacity binding."""
    rng = random.Random(seed)
    raw_apps = []
    for index in range(40):
        profile = {dim: rng.choice([0, 0.25, 0.5, 1]) for dim in ("cpu", "memory_bandwidth", "llc")}
        if not any(profile.values()):
            profile["cpu"] = 1
        raw_apps.append({
            "name": f"a{index}", "image": "img", "replicas": 5, "profile": profile,
            "resources": {"requests": {"cpu": rng.choice(["250m", "500m", "1"])}},
        })
    raw_nodes: list[dict[str, Any]] = [
        {"name": f"n{index}", "labels": {HOST: f"h{index % 3}"}, "allocatable": {"cpu": rng.choice(["11", "14"])}}
        for index in range(12)
    ]
    raw_nodes.append({"name": "alone", "labels": {}, "allocatable": {"cpu": "8"}})
    return raw_apps, raw_nodes, {"label": HOST, "pressures": {"memory_bandwidth": 0.6, "llc": 0.3}}


@pytest.mark.parametrize("seed", [7, 8])
def test_the_annealing_prices_moves_within_and_across_hosts(seed: int) -> None:
    """The annealing's incremental prices (moves within a host, across hosts, to the node alone; swaps) add up
    to the total from the definition, and every node's load copy of its group's sums is its group's sum."""
    raw_apps, raw_nodes, raw_sharing = annealing_instance(seed)
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    sharing = parse_sharing(raw_sharing)
    engine = _Engine(apps, nodes, sharing)
    engine.build_classes()
    assignment: list[list[int]] = [[] for _ in apps]
    assert engine.greedy([app.index for app in apps for _ in range(app.replicas)], assignment) is None
    greedy_score = shared_pairwise(apps, nodes, assignment, raw_sharing)
    assert engine.state.interference == pytest.approx(greedy_score, abs=1e-6)
    movable = [(app.index, position) for app in apps for position in range(app.replicas)]
    assert engine.anneal(movable, assignment, 50_000, 1) > 1000
    assert feasible(apps, nodes, assignment)
    score = shared_pairwise(apps, nodes, assignment, raw_sharing)
    assert engine.annealed_score == pytest.approx(score, abs=1e-6)
    assert score < greedy_score
    groups = sharing.groups(nodes)
    for node_index, load in enumerate(engine.state.load):
        members = [n for n in range(len(nodes)) if groups[n] == groups[node_index]]
        for position, dim in enumerate(sharing.shared_dims):
            expected = sum(
                sharing.extend(apps[app_index].profile)[len(PRESSURE_DIMENSIONS) + position]
                for app_index, replicas in enumerate(assignment) for n in replicas if n in members
            )
            assert load[len(PRESSURE_DIMENSIONS) + position] == pytest.approx(expected, abs=1e-6), (node_index, dim)
    plan = place(raw_apps, raw_nodes, sharing=raw_sharing)
    assert plan.method.endswith("annealing")
    assert plan.total_interference == pytest.approx(shared_pairwise(apps, nodes, plan.assignment, raw_sharing))


@pytest.mark.parametrize(
    ("sharing", "field", "words"),
    [
        ("host", "sharing", "must be a mapping with 'label' and 'pressures', got 'host'"),
        ({"label": HOST, "share": {}}, "sharing.share", "unknown field 'share': expected label and pressures"),
        ({"pressures": {}}, "sharing.label", "must be the node label whose value names the group"),
        ({"label": HOST, "pressures": ["llc"]}, "sharing.pressures", "must be a mapping of resource to a share"),
        ({"label": HOST, "pressures": {"cache": 0.5}}, "sharing.pressures.cache", "unknown resource 'cache'"),
        ({"label": HOST, "pressures": {"llc": 1.5}}, "sharing.pressures.llc", "must be a number from 0"),
        ({"label": HOST, "pressures": {"llc": True}}, "sharing.pressures.llc", "got true"),
    ],
)
def test_bad_sharing_is_an_error_naming_the_field(sharing: object, field: str, words: str) -> None:
    apps, nodes, _ = kind_like(0.5)
    with pytest.raises(InputError) as raised:
        place(apps, nodes, sharing=sharing)
    assert f"field '{field}'" in str(raised.value)
    assert words in str(raised.value)

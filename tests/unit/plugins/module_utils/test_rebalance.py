"""Bounded rebalancing (module_utils/rebalance.py): at most k moves of running replicas, each the best one left.

Scores and feasibility come from the property tests' own definitions
(test_placement_properties: pairwise_interference, feasible), not from the
engine's bookkeeping.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from hypothesis import given, settings
from hypothesis import strategies as st

from .test_placement_properties import feasible, instances, pairwise_interference, random_assignment

Instance = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def moves_between(before: list[list[int]], after: list[list[int]]) -> int:
    """Replicas that run on another node: per app, the multiset difference."""
    return sum(sum((Counter(b) - Counter(a)).values()) for b, a in zip(before, after, strict=True))


def named(
    raw_nodes: list[dict[str, Any]], raw_apps: list[dict[str, Any]], assignment: list[list[int]],
) -> dict[str, list[str]]:
    return {app["name"]: [raw_nodes[n]["name"] for n in replicas]
            for app, replicas in zip(raw_apps, assignment, strict=True)}


@settings(max_examples=60, deadline=None)
@given(instances(max_replicas=12, max_nodes=5, capacity=False), st.integers(0, 2**16), st.integers(0, 4))
def test_at_most_k_moves_each_lowering_interference_and_constraints_hold(
    instance: Instance, seed: int, max_moves: int,
) -> None:
    raw_apps, raw_nodes = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    before = random_assignment(apps, len(nodes), seed)
    plan = place(raw_apps, raw_nodes, previous=named(raw_nodes, raw_apps, before), rebalance=True,
                 max_moves=max_moves)
    after = plan.assignment
    assert feasible(apps, nodes, after)
    # One entry per move made (a replica may move twice), each one lowering the total.
    assert moves_between(before, after) <= len(plan.moved) <= max_moves
    if plan.moved:
        assert pairwise_interference(apps, after) < pairwise_interference(apps, before) - 1e-9
    else:
        assert pairwise_interference(apps, after) == pytest.approx(pairwise_interference(apps, before))
    if max_moves == 0:
        assert [sorted(r) for r in after] == [sorted(r) for r in before]
    again = place(raw_apps, raw_nodes, previous=named(raw_nodes, raw_apps, before), rebalance=True,
                  max_moves=max_moves)
    assert again.assignment == after


@settings(max_examples=60, deadline=None)
@given(instances(max_replicas=10, max_nodes=4, capacity=False), st.integers(0, 2**16))
def test_one_move_is_the_best_single_move(instance: Instance, seed: int) -> None:
    raw_apps, raw_nodes = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    before = random_assignment(apps, len(nodes), seed)
    best = pairwise_interference(apps, before)
    for app_index, replicas in enumerate(before):
        for position in range(len(replicas)):
            for target in range(len(nodes)):
                moved = [list(r) for r in before]
                moved[app_index][position] = target
                if feasible(apps, nodes, moved):
                    best = min(best, pairwise_interference(apps, moved))
    plan = place(raw_apps, raw_nodes, previous=named(raw_nodes, raw_apps, before), rebalance=True, max_moves=1)
    assert pairwise_interference(apps, plan.assignment) == pytest.approx(best, abs=1e-6)


def test_pinned_apps_never_move_and_the_move_is_reported() -> None:
    apps = [
        {"name": "pinned", "image": "x", "type": "cpu", "node": "n0"},
        {"name": "loose", "image": "x", "type": "cpu"},
        {"name": "stream", "image": "x", "type": "memory"},
    ]
    nodes = ["n0", "n1"]
    previous = {"pinned": ["n0"], "loose": ["n0"], "stream": ["n1"]}
    plan = place(apps, nodes, previous=previous, rebalance=True, max_moves=5)
    assert plan.node_names(0) == ["n0"] and plan.node_names(1) == ["n1"] and plan.node_names(2) == ["n1"]
    assert plan.total_interference == 0
    assert plan.moved == [{"app": "loose", "from": "n0", "reason": "rebalance: to n1, interference -1", "to": ["n1"]}]
    # A second run from there moves nothing.
    settled = {"pinned": ["n0"], "loose": ["n1"], "stream": ["n1"]}
    assert place(apps, nodes, previous=settled, rebalance=True, max_moves=5).moved == []
    # Both pinned to n0: nothing can move.
    both = [apps[0], {**apps[1], "node": "n0"}, apps[2]]
    assert place(both, nodes, previous=previous, rebalance=True, max_moves=5).moved == []
    # Without max_moves, rebalance places everything anew; without rebalance, nothing running moves.
    assert place(apps, nodes, previous=previous).moved == []


@pytest.mark.parametrize("value", [-1, 10_001, 1.5, "2", True])
def test_a_move_limit_out_of_range_is_refused(value: object) -> None:
    with pytest.raises(PlacementError, match=r"max_moves.*must be a whole number from 0 to 10,000"):
        place([{"name": "a", "image": "x", "type": "cpu"}], ["n0"], rebalance=True, max_moves=value)


@settings(max_examples=60, deadline=None)
@given(instances(max_replicas=10, max_nodes=4, capacity=False), st.integers(0, 2**16), st.data())
def test_only_replicas_on_the_move_from_nodes_and_not_held_move_and_the_first_is_the_best_of_those(
    instance: Instance, seed: int, data: st.DataObject,
) -> None:
    raw_apps, raw_nodes = instance
    apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
    before = random_assignment(apps, len(nodes), seed)
    sources = data.draw(st.sets(st.integers(0, len(nodes) - 1)))
    held = data.draw(st.sets(st.integers(0, len(apps) - 1)))
    plan = place(raw_apps, raw_nodes, previous=named(raw_nodes, raw_apps, before), rebalance=True, max_moves=1,
                 move_from=[raw_nodes[n]["name"] for n in sorted(sources)],
                 hold=[raw_apps[a]["name"] for a in sorted(held)])
    after = plan.assignment
    assert feasible(apps, nodes, after)
    # Held apps, and replicas on other nodes, stay.
    for app_index, (was, now) in enumerate(zip(before, after, strict=True)):
        gone = Counter(was) - Counter(now)
        assert app_index not in held or not gone
        assert all(node in sources for node in gone)
    # The one move made is the best single move among the allowed ones (brute force).
    best = pairwise_interference(apps, before)
    for app_index, replicas in enumerate(before):
        for position, current in enumerate(replicas):
            if app_index in held or current not in sources:
                continue
            for target in range(len(nodes)):
                moved = [list(r) for r in before]
                moved[app_index][position] = target
                if feasible(apps, nodes, moved):
                    best = min(best, pairwise_interference(apps, moved))
    assert pairwise_interference(apps, after) == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("move_from", "n0", r"move_from.*must be a list of node names"),
    ("move_from", ["n9"], r"move_from.*names no node of this placement: n9"),
    ("hold", [3], r"hold.*must be a list of app names"),
    ("hold", ["ghost"], r"hold.*names no app of this placement: ghost"),
])
def test_move_from_and_hold_name_only_known_nodes_and_apps(field: str, value: object, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        place([{"name": "a", "image": "x", "type": "cpu"}], ["n0"], rebalance=True, max_moves=1, **{field: value})

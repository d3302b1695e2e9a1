"""The report's collisions (placement.find_collisions) against the pairs enumerated one by one.

find_collisions never enumerates pairs: it sums per node, counts by the set
of resources each app presses on, and lists the PAIRS_LISTED worst pairs with
pruning. Here every pair of replicas is scored the slow way and the two are
compared on random plans (hypothesis), then on plans too big to enumerate.
"""

from __future__ import annotations

import itertools
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dot, node_interference
from ansible_collections.interference.orchestrator.plugins.module_utils.model import App, parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import (
    PAIR_LISTING_MAX_PROFILES,
    PAIRS_IN_WARNING,
    PAIRS_LISTED,
    find_collisions,
    place,
)
from hypothesis import given, settings
from hypothesis import strategies as st

PRESSURE = st.sampled_from([0, 0.25, 0.5, 1])
PROFILE = st.fixed_dictionaries({}, optional={"cpu": PRESSURE, "memory_bandwidth": PRESSURE, "llc": PRESSURE})


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[App], list[str], list[list[int]]]:
    node_count = draw(st.integers(1, 3))
    app_count = draw(st.integers(1, 30))
    apps = parse_apps([
        {"name": f"a{i}", "image": "x", "profile": draw(PROFILE) or {"cpu": 0}} for i in range(app_count)
    ])
    assignment = [draw(st.lists(st.integers(0, node_count - 1), min_size=1, max_size=3)) for _ in apps]
    return apps, [f"n{i}" for i in range(node_count)], assignment


def enumerated_pairs(apps: list[App], assignment: list[list[int]]) -> dict[tuple[int, int, int], float]:
    """(node, left app, right app) -> summed score of every pair of replicas with a positive score."""
    replicas = [(node, app) for app, nodes in enumerate(assignment) for node in nodes]
    pairs: dict[tuple[int, int, int], float] = {}
    for (node, left), (other, right) in itertools.combinations(replicas, 2):
        score = dot(apps[left].profile, apps[right].profile)
        if node == other and score > 0:
            key = (node, min(left, right), max(left, right))
            pairs[key] = pairs.get(key, 0.0) + score
    return pairs


@settings(max_examples=80, deadline=None)
@given(plan=plans())
def test_collisions_equal_the_enumerated_pairs(plan: tuple[list[App], list[str], list[list[int]]]) -> None:
    apps, names, assignment = plan
    found = find_collisions(apps, parse_nodes(names), assignment)
    pairs = enumerated_pairs(apps, assignment)
    assert found.pair_count == len(pairs)
    worst = sorted((round(score, 6) for score in pairs.values()), reverse=True)[:PAIRS_LISTED]
    assert [pair["score"] for pair in found.pairs] == worst
    for pair in found.pairs:
        node = names.index(pair["node"])
        left, right = sorted(int(name[1:]) for name in pair["apps"])
        assert round(pairs[(node, left, right)], 6) == pair["score"]
    for node in range(len(names)):
        residents = [apps[app].profile for app, nodes in enumerate(assignment) for n in nodes if n == node]
        assert abs(found.by_node[node] - node_interference(residents)) < 1e-6
        for app in {app for app, nodes in enumerate(assignment) if node in nodes}:
            formed = sum(score for (n, left, right), score in pairs.items() if n == node and app in (left, right))
            assert abs(found.by_app[node][apps[app].name] - formed) < 1e-6


def crowd(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"name": f"a{i}", "image": "x", "type": "cpu", **extra} for i in range(count)]


def test_report_lists_the_worst_pairs_and_counts_the_rest() -> None:
    """30 cpu apps on one node: 435 pairs, 20 listed, the warning names 10 and counts the others."""
    plan = place(crowd(30), ["w1"])
    report = plan.report()
    assert len(report["pairs"]) == PAIRS_LISTED
    assert report["pairs_not_listed"] == 30 * 29 // 2 - PAIRS_LISTED
    assert report["nodes"][0]["interference"] == 435
    assert set(report["nodes"][0]["interference_by_app"].values()) == {29}
    assert report["warning"].endswith(f"; and {435 - PAIRS_IN_WARNING} more pairs")


def test_heaviest_pairs_come_first_across_nodes() -> None:
    apps = parse_apps([
        {"name": "big", "image": "x", "profile": {"cpu": 1}, "replicas": 3},
        {"name": "small", "image": "x", "profile": {"cpu": 0.25}},
        {"name": "other", "image": "x", "profile": {"llc": 1}},
        {"name": "mixed", "image": "x", "profile": {"cpu": 0.5, "llc": 0.5}},
    ])
    found = find_collisions(apps, parse_nodes(["w1", "w2"]), [[0, 0, 1], [0], [1], [1]])
    assert [(pair["node"], pair["apps"], pair["score"]) for pair in found.pairs] == [
        ("w1", ["big", "big"], 1.0),
        ("w1", ["big", "small"], 0.5),
        ("w2", ["big", "mixed"], 0.5),
        ("w2", ["other", "mixed"], 0.5),
    ]


def test_pairs_are_counted_past_the_cap_on_distinct_profiles() -> None:
    """More distinct profiles on one node than the listing looks at: every pair is still counted."""
    count = PAIR_LISTING_MAX_PROFILES + 50
    apps = parse_apps([
        {"name": f"a{i}", "image": "x", "profile": {"cpu": (i + 1) / count, "llc": 1 - i / count}}
        for i in range(count)
    ])
    found = find_collisions(apps, parse_nodes(["w1"]), [[0] for _ in apps])
    assert found.pair_count == count * (count - 1) // 2
    assert len(found.pairs) == PAIRS_LISTED
    assert all(pair["score"] > 0 for pair in found.pairs)

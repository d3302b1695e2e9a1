"""The search after the greedy plan (annealing over relocations and swaps), where capacity binds.

- every hard constraint holds at the end, on heterogeneous nodes whose
  capacity binds, with pins, selectors, GPUs and a `previous` placement kept
  (checked here, independently of the engine's bookkeeping);
- the reported score equals the score recomputed here from the assignment and
  the raw profiles (sum over nodes of pairwise dot products);
- the search is deterministic, improves on the local-search plan where that
  plan is far from the bound, and `search_effort` is validated.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.filter.placement_report import placement_report
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import (
    InputError,
    UnschedulableError,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

DIMENSIONS = ("cpu", "memory_bandwidth", "llc", "disk_io", "network_io")
ONE_HOT = {"cpu": {"cpu": 1.0}, "memory": {"memory_bandwidth": 1.0}}
MILLI = {"100m": 100, "250m": 250, "500m": 500, "1": 1000, "2": 2000}
MEBI = {"128Mi": 128, "512Mi": 512, "1Gi": 1024}


def raw_profile(item: dict[str, Any]) -> tuple[float, ...]:
    """The app's pressure vector read from its raw item, without the engine's parser."""
    pressures = item["profile"] if "profile" in item else ONE_HOT[item["type"]]
    return tuple(float(pressures.get(dim, 0.0)) for dim in DIMENSIONS)


def independent_score(raw_apps: list[dict[str, Any]], node_names: dict[str, list[str]]) -> float:
    """Sum over nodes of the dot products of every pair of replicas there (score)."""
    residents: dict[str, list[tuple[float, ...]]] = {}
    for item in raw_apps:
        for node in node_names[item["name"]]:
            residents.setdefault(node, []).append(raw_profile(item))
    total = 0.0
    for profiles in residents.values():
        for i, left in enumerate(profiles):
            for right in profiles[i + 1:]:
                total += sum(a * b for a, b in zip(left, right, strict=True))
    return total


def requests_of(item: dict[str, Any]) -> tuple[int, int]:
    """(millicores, MiB) the app requests, from the small vocabulary the strategy uses."""
    requests = item.get("resources", {}).get("requests", {})
    return MILLI.get(requests.get("cpu", ""), 0), MEBI.get(requests.get("memory", ""), 0)


def check_constraints(raw_apps: list[dict[str, Any]], raw_nodes: list[dict[str, Any]],
                      node_names: dict[str, list[str]], previous: dict[str, list[str]]) -> None:
    """Assert every hard constraint of the plan, from the raw input (no engine code)."""
    nodes = {node["name"]: node for node in raw_nodes}
    used = {name: [0, 0, 0, 0] for name in nodes}  # millicores, MiB, pods, GPUs
    for item in raw_apps:
        placed = node_names[item["name"]]
        assert len(placed) == item.get("replicas", 1)
        cpu, memory = requests_of(item)

        def fits_alone(node: dict[str, Any], item: dict[str, Any] = item, cpu: int = cpu,
                       memory: int = memory) -> bool:
            allocatable = node["allocatable"]
            return (
                item.get("node", node["name"]) == node["name"]
                and all(node["labels"].get(k) == v for k, v in item.get("node_selector", {}).items())
                and item.get("gpus", 0) <= int(allocatable.get("nvidia.com/gpu", "0"))
                and cpu <= int(allocatable["cpu"].rstrip("m"))
                and memory <= int(allocatable["memory"].removesuffix("Mi"))
                and int(allocatable["pods"]) >= 1
            )

        eligible = [name for name, node in nodes.items() if fits_alone(node)]
        spread = max(1, math.ceil(item.get("replicas", 1) / max(1, len(eligible))))
        for name, count in Counter(placed).items():
            assert name in eligible, f"{item['name']} on {name}: pin, selector, GPU or size"
            assert count <= spread, f"{item['name']}: {count} replicas on {name} (spread {spread})"
            used[name][0] += cpu * count
            used[name][1] += memory * count
            used[name][2] += count
            used[name][3] += item.get("gpus", 0) * count
        kept = Counter(previous.get(item["name"], []))
        assert not kept - Counter(placed), f"{item['name']} moved away from {previous[item['name']]}"
    for name, (cpu, memory, pods, gpus) in used.items():
        allocatable = nodes[name]["allocatable"]
        assert cpu <= int(allocatable["cpu"].rstrip("m")), f"{name}: cpu over allocatable"
        assert memory <= int(allocatable["memory"].removesuffix("Mi")), f"{name}: memory over allocatable"
        assert pods <= int(allocatable["pods"]), f"{name}: too many pods"
        assert gpus <= int(allocatable.get("nvidia.com/gpu", "0")), f"{name}: too many GPUs"


@st.composite
def binding_instances(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """17 to 40 replicas (more than the exact search takes) on 3 to 6 nodes of different sizes.

    Node CPU is drawn in sizes 1:2:4 and scaled to hold 1.25 to 2 times the
    requested CPU, so capacity binds; some apps are pinned, some select a zone,
    some need a GPU that only some nodes have.
    """
    node_count = draw(st.integers(3, 6))
    apps: list[dict[str, Any]] = []
    replicas_left = draw(st.integers(17, 40))
    while replicas_left:
        replicas = draw(st.integers(1, min(3, replicas_left)))
        replicas_left -= replicas
        item: dict[str, Any] = {"name": f"app{len(apps)}", "image": "img", "replicas": replicas}
        if draw(st.integers(0, 3)):
            item["type"] = draw(st.sampled_from(["cpu", "memory"]))
        else:
            item["profile"] = {
                "cpu": draw(st.sampled_from([0.2, 0.5, 0.8])),
                "llc": draw(st.sampled_from([0.0, 0.3, 0.6])),
                "memory_bandwidth": draw(st.sampled_from([0.0, 0.4])),
            }
        item["resources"] = {"requests": {"cpu": draw(st.sampled_from(list(MILLI))),
                                          "memory": draw(st.sampled_from(list(MEBI)))}}
        choice = draw(st.integers(0, 9))
        if choice == 0 and replicas == 1:
            item["node"] = f"n{draw(st.integers(0, node_count - 1))}"
        elif choice == 1:
            item["node_selector"] = {"zone": draw(st.sampled_from(["a", "b"]))}
        elif choice == 2:  # one in ten apps needs a GPU
            item["gpus"] = 1
        apps.append(item)
    total_cpu = sum(requests_of(a)[0] * a["replicas"] for a in apps)
    total_memory = sum(requests_of(a)[1] * a["replicas"] for a in apps)
    weights = [draw(st.sampled_from([1, 2, 4])) for _ in range(node_count)]
    room = draw(st.sampled_from([1.25, 1.5, 2.0]))
    nodes = []
    for index, weight in enumerate(weights):
        share = weight / sum(weights)
        nodes.append({
            "name": f"n{index}",
            "labels": {"zone": "a" if index % 2 == 0 else "b"},
            "allocatable": {
                "cpu": f"{max(2000, math.ceil(total_cpu * room * share))}m",
                "memory": f"{max(1024, math.ceil(total_memory * room * share))}Mi",
                "pods": str(max(3, math.ceil(sum(a['replicas'] for a in apps) * room * share) + 2)),
                "nvidia.com/gpu": str(draw(st.integers(2, 3)) if index < 2 else draw(st.integers(0, 2))),
            },
        })
    return apps, nodes


SEARCH = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SEARCH
@given(binding_instances(), st.sampled_from([0.2, 2.0]))
def test_search_keeps_every_hard_constraint(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]]], effort: float,
) -> None:
    raw_apps, raw_nodes = instance
    try:
        plan = place(raw_apps, raw_nodes, search_effort=effort)
    except UnschedulableError:
        event("unschedulable")
        return
    event(plan.method)
    node_names = {item["name"]: plan.node_names(index) for index, item in enumerate(raw_apps)}
    check_constraints(raw_apps, raw_nodes, node_names, {})
    assert plan.total_interference == pytest.approx(independent_score(raw_apps, node_names), abs=1e-6)
    assert plan.total_interference >= plan.lower_bound - 1e-6


@SEARCH
@given(binding_instances(), st.randoms(use_true_random=False))
def test_search_keeps_previous_placement(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]]], rng: random.Random,
) -> None:
    """Replicas of a feasible earlier plan stay where they are; the search moves only the new ones."""
    raw_apps, raw_nodes = instance
    # A quarter of the apps ran before, so that more than the exact search's 16 replicas are left to place.
    earlier = rng.sample(raw_apps, k=max(1, len(raw_apps) // 4))
    try:
        earlier_plan = place(earlier, raw_nodes, search_effort=0.2)
    except UnschedulableError:
        return
    previous = {item["name"]: earlier_plan.node_names(index) for index, item in enumerate(earlier)}
    try:
        plan = place(raw_apps, raw_nodes, previous=previous, search_effort=0.5)
    except UnschedulableError:
        return
    event(plan.method)
    node_names = {item["name"]: plan.node_names(index) for index, item in enumerate(raw_apps)}
    check_constraints(raw_apps, raw_nodes, node_names, previous)
    assert sorted(plan.kept) == sorted(previous)
    assert not plan.moved


def operator_like(app_count: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """20 nodes, half 8 CPU and half 2 CPU; 40% cpu, 40% memory, 20% mixed; requests ~80% of the CPU."""
    rng = random.Random(seed)
    nodes = [
        {"name": f"n{i}", "labels": {}, "allocatable": {"cpu": f"{8000 if i % 2 else 2000}m",
                                                        "memory": "65536Mi", "pods": "110"}}
        for i in range(20)
    ]
    weights = [rng.choice([1, 2, 4, 8]) for _ in range(app_count)]
    unit = 100_000 * 0.8 / sum(weights)
    apps = []
    for index, weight in enumerate(weights):
        draw = rng.random()
        item: dict[str, Any] = {"name": f"a{index}", "image": "img",
                                "resources": {"requests": {"cpu": f"{max(10, int(weight * unit))}m"}}}
        if draw < 0.4:
            item["type"] = "cpu"
        elif draw < 0.8:
            item["type"] = "memory"
        else:
            item["profile"] = {"cpu": rng.choice([0.2, 0.5, 0.8]), "llc": rng.choice([0.3, 0.6]),
                               "memory_bandwidth": rng.choice([0.0, 0.4])}
        apps.append(item)
    return apps, nodes


def test_annealing_beats_local_search_when_capacity_binds() -> None:
    apps, nodes = operator_like(80, seed=5)
    without = place(apps, nodes, search_effort=0)
    with_search = place(apps, nodes, search_effort=0.5)
    assert without.method == "greedy+local-search"
    assert with_search.method == "greedy+local-search+annealing"
    # The greedy plan strands big requests on the small nodes; the search must win back a real share.
    assert with_search.total_interference < 0.9 * without.total_interference
    node_names = {item["name"]: with_search.node_names(index) for index, item in enumerate(apps)}
    assert with_search.total_interference == pytest.approx(independent_score(apps, node_names), abs=1e-6)
    report = with_search.report()
    assert report["total_interference"] == pytest.approx(independent_score(apps, node_names), abs=1e-5)
    assert report["gap"] == pytest.approx(
        (with_search.total_interference - with_search.lower_bound) / with_search.lower_bound, abs=1e-5
    )


def test_search_is_deterministic() -> None:
    apps, nodes = operator_like(60, seed=9)
    first = place(apps, nodes, search_effort=0.3)
    assert first.method == "greedy+local-search+annealing"
    assert place(apps, nodes, search_effort=0.3).assignment == first.assignment


@pytest.mark.parametrize("effort", [-1, 101, "high", True, None])
def test_search_effort_is_validated(effort: object) -> None:
    with pytest.raises(InputError, match="search_effort"):
        place([{"name": "a", "image": "img", "type": "cpu"}], ["w1"], search_effort=effort)


def test_report_filter_passes_search_effort() -> None:
    apps, nodes = operator_like(40, seed=3)
    assert placement_report(apps, nodes, search_effort=0)["method"] == "greedy+local-search"
    assert placement_report(apps, nodes, search_effort=0.2)["method"] == "greedy+local-search+annealing"


def test_gap_is_zero_on_the_fast_path() -> None:
    apps = [{"name": f"a{i}", "image": "img", "type": "cpu" if i % 2 else "memory"} for i in range(40)]
    report = place(apps, [f"w{i}" for i in range(4)]).report()
    assert report["method"] == "greedy"
    assert report["proven_optimal"]
    assert report["gap"] == 0

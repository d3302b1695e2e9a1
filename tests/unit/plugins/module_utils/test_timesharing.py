"""CPU time-sharing (timesharing.py): the predicted slowdowns, the search's per-node sums, and the plans.

The figures are checked against slowdowns worked out by hand
(`test_the_definition_gives_the_hand_worked_slowdowns`), and the per-node
sums everything uses against the definition computed here pair by pair
(`slowdowns_by_pairs`) on random plans; the plans against the engine's own
plan without the pass and against every hard constraint.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils import timesharing
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import AppInputError, UnschedulableError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import PRESSURE_DIMENSIONS
from ansible_collections.interference.orchestrator.plugins.module_utils.model import App, Node, parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import (
    NO_SHARING,
    Sharing,
    parse_sharing,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .test_placement_properties import feasible
from .test_sharing import shared_instances

DEMANDS = st.sampled_from([None, "0", "500m", "1", "2"])
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def demanding_instances(
    draw: st.DrawFn, max_replicas: int = 7, max_nodes: int = 4
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """A shared instance (test_sharing) whose apps declare CPU demands (some none), at least one above 0."""
    raw_apps, raw_nodes, sharing = draw(shared_instances(max_replicas=max_replicas, max_nodes=max_nodes))
    for item in raw_apps:
        demand = draw(DEMANDS)
        if demand is not None:
            item["cpu_demand"] = demand
    raw_apps[0]["cpu_demand"] = draw(st.sampled_from(["250m", "1", "3"]))
    return raw_apps, raw_nodes, sharing


def seed_apps(**demand: str) -> list[dict[str, Any]]:
    """The seed's four apps, each with the CPU demand given by name (none when not given)."""
    apps = []
    for name, app_type in (("c-ray", "cpu"), ("compress-7zip", "cpu"), ("mbw", "memory"), ("stressapptest", "memory")):
        item: dict[str, Any] = {"name": name, "image": f"pts/{name}", "type": app_type}
        if name in demand:
            item["cpu_demand"] = demand[name]
        apps.append(item)
    return apps


def workers(cpus: str, count: int = 2) -> list[dict[str, Any]]:
    """kind's workers: `count` nodes of `cpus` CPUs on one host (one value of kubernetes.io/os)."""
    return [
        {"name": f"worker{index or ''}", "labels": {"kubernetes.io/os": "linux"}, "allocatable": {"cpu": cpus}}
        for index in range(count)
    ]


ONE_CORE_EACH = {"c-ray": "1", "compress-7zip": "1", "mbw": "1", "stressapptest": "1"}
MEMORY_SHARED = {"label": "kubernetes.io/os", "pressures": {"memory_bandwidth": 0.6}}


def slowdowns_by_pairs(
    apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]], sharing: Sharing = NO_SHARING
) -> list[list[float]]:
    """The predicted slowdown of every replica (per app, in replica order), pair by pair from the definition."""
    demand = timesharing.node_demands(apps, nodes, assignment)
    capacity = [timesharing._capacity(node.cpu_millicores) for node in nodes]
    group = sharing.groups(nodes)
    replicas = [(app, node_index) for app, placed in zip(apps, assignment, strict=True) for node_index in placed]
    result: list[list[float]] = [[] for _ in apps]
    for position, (app, node) in enumerate(replicas):
        own = app.cpu_demand_millicores
        contention = 0.0
        for other_position, (other, other_node) in enumerate(replicas):
            if other_position == position:
                continue
            if other_node == node:
                weights = (1.0,) * len(PRESSURE_DIMENSIONS)
                if own and other.cpu_demand_millicores:
                    chance = timesharing._together(demand[node], capacity[node], own)
                elif other.cpu_demand_millicores:
                    chance = 1 / timesharing.factor(demand[node], capacity[node])
                else:
                    chance = 1.0
            elif group[node] < 0 and group[node] == group[other_node]:
                weights = sharing.shares
                running = 1 / timesharing.factor(demand[other_node], capacity[other_node])
                chance = running if other.cpu_demand_millicores else 1.0
            else:
                continue
            contention += chance * sum(w * a * b for w, a, b in zip(weights, app.profile, other.profile, strict=True))
        slowed = timesharing.factor(demand[node], capacity[node]) if own else 1.0
        result[app.index].append(slowed * (1 + contention))
    return result


def by_pairs(apps: list[App], nodes: list[Node], assignment: list[list[int]], sharing: Sharing) -> float:
    """The time-shared score from the definition."""
    return sum(value - 1 for per_app in slowdowns_by_pairs(apps, nodes, assignment, sharing) for value in per_app)


def approx(expected: list[list[float]]) -> list[list[Any]]:
    return [[pytest.approx(value) for value in per_app] for per_app in expected]


def residents(plan_report: dict[str, Any]) -> list[set[str]]:
    return [set(node["apps"]) for node in plan_report["nodes"]]


def test_the_definition_gives_the_hand_worked_slowdowns() -> None:
    apps = parse_apps([
        {"name": "mbw", "image": "i", "type": "memory", "cpu_demand": "1"},
        {"name": "stressapptest", "image": "i", "type": "memory", "cpu_demand": "1"},
        {"name": "c-ray", "image": "i", "type": "cpu", "cpu_demand": "1"},
        {"name": "idle-mem", "image": "i", "type": "memory"},
    ])
    one_cpu, two_cpus = parse_nodes(workers("1")), parse_nodes(workers("2"))
    # Two 1-core memory apps on a 1-CPU node take turns: each gets half the time (x2) and never meets the other.
    assert timesharing.slowdowns(apps, one_cpu, [[0], [0], [], []]) == approx([[2.0], [2.0], [], []])
    # Three 1-core apps on 2 CPUs: x1.5, and while one runs another does half the time: 1.5 * (1 + 0.5).
    assert timesharing.slowdowns(apps, two_cpus, [[0], [0], [0], []]) == approx([[2.25], [2.25], [1.5], []])
    # Not oversubscribed: the plain dot product (1 per memory neighbour), no factor.
    assert timesharing.slowdowns(apps, two_cpus, [[0], [0], [1], []]) == approx([[2.0], [2.0], [1.0], []])
    # An app without a demand is not slowed, and meets each demanding one for the share of time that one runs
    # (1/2 + 1/2); a demanding one meets it all the time it runs itself: 2 * (1 + 1).
    assert timesharing.slowdowns(apps, one_cpu, [[0], [0], [], [0]]) == approx([[4.0], [4.0], [], [2.0]])
    # Across the two workers of one host, at a memory share of 0.6, a neighbour counts for the time it runs:
    # mbw time-shares its worker with c-ray (x2) and meets stressapptest, alone on the other, all the time;
    # stressapptest meets mbw half the time.
    shared = parse_sharing(MEMORY_SHARED)
    assert timesharing.slowdowns(apps, one_cpu, [[0], [1], [0], []], shared) == approx([[3.2], [1.3], [2.0], []])


@SLOW
@given(demanding_instances(max_replicas=12, max_nodes=5), st.randoms(use_true_random=False))
def test_the_searchs_per_node_sums_agree_with_the_definition(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], rng: random.Random,
) -> None:
    raw_apps, raw_nodes, raw_sharing = instance
    apps, nodes, sharing = parse_apps(raw_apps), parse_nodes(raw_nodes), parse_sharing(raw_sharing)
    assignment = [[rng.randrange(len(nodes)) for _ in range(app.replicas)] for app in apps]
    model = timesharing._TimeShared(apps, nodes, assignment, sharing)
    assert timesharing.slowdowns(apps, nodes, assignment, sharing) == [
        [pytest.approx(value, abs=1e-9) for value in per_app]
        for per_app in slowdowns_by_pairs(apps, nodes, assignment, sharing)
    ]
    assert sum(model.cost) == pytest.approx(by_pairs(apps, nodes, assignment, sharing), abs=1e-9)
    for _step in range(5):
        app_index = rng.randrange(len(apps))
        position = rng.randrange(apps[app_index].replicas)
        source, target = assignment[app_index][position], rng.randrange(len(nodes))
        model.move(app_index, source, target)
        assignment[app_index][position] = target
        assert sum(model.cost) == pytest.approx(by_pairs(apps, nodes, assignment, sharing), abs=1e-9)


def online_added_cost(
    apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]], sharing: Sharing,
    *, app: App, target: int,
) -> float:
    """added_cost as an online scheduler calls it: from per-node NodeLoads and its group's other nodes' sums."""
    loads = [timesharing.NodeLoad(node.cpu_millicores) for node in nodes]
    for each, replicas in zip(apps, assignment, strict=True):
        for node_index in replicas:
            loads[node_index].add(each.profile, each.cpu_demand_millicores)
    groups = sharing.groups(nodes)
    others = None
    if groups[target] < 0:
        members = [loads[m] for m in range(len(nodes)) if groups[m] == groups[target] and m != target]
        others = (
            [sum(values) for values in zip(*(m.weighted() for m in members), strict=True)] if members
            else [0.0] * len(PRESSURE_DIMENSIONS),
            [sum(values) for values in zip(*(m.exposure() for m in members), strict=True)] if members
            else [0.0] * len(PRESSURE_DIMENSIONS),
        )
    return timesharing.added_cost(
        (app.profile, app.cpu_demand_millicores), loads[target], sharing=sharing, others=others
    )


@SLOW
@given(demanding_instances(max_replicas=12, max_nodes=5), st.randoms(use_true_random=False))
def test_what_a_replica_adds_online_is_the_rise_of_the_definitions_score(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]], rng: random.Random,
) -> None:
    # The extender's price of a node for a pod (NodeLoad sums, added_cost) is the rise of the plan's
    # time-shared score, computed pair by pair, when one more replica of the pod's app joins that node.
    raw_apps, raw_nodes, raw_sharing = instance
    apps, nodes, sharing = parse_apps(raw_apps), parse_nodes(raw_nodes), parse_sharing(raw_sharing)
    assignment = [[rng.randrange(len(nodes)) for _ in range(app.replicas)] for app in apps]
    before = by_pairs(apps, nodes, assignment, sharing)
    for _step in range(4):
        app_index, target = rng.randrange(len(apps)), rng.randrange(len(nodes))
        grown = [list(replicas) for replicas in assignment]
        grown[app_index].append(target)
        # The definition counts replicas by app: one more replica of the app, its profile and demand.
        grown_apps = [app if index != app_index else _with_replicas(app, app.replicas + 1)
                      for index, app in enumerate(apps)]
        rise = by_pairs(grown_apps, nodes, grown, sharing) - before
        added = online_added_cost(apps, nodes, assignment, sharing, app=apps[app_index], target=target)
        assert added == pytest.approx(rise, abs=1e-9)


def _with_replicas(app: App, replicas: int) -> App:
    return dataclasses.replace(app, replicas=replicas)


@SLOW
@given(demanding_instances())
def test_the_pass_never_worsens_the_plan_and_keeps_every_constraint(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    raw_apps, raw_nodes, raw_sharing = instance
    blind_apps = [{key: value for key, value in item.items() if key != "cpu_demand"} for item in raw_apps]
    try:
        blind = place(blind_apps, raw_nodes, sharing=raw_sharing)
    except UnschedulableError:
        with pytest.raises(UnschedulableError):
            place(raw_apps, raw_nodes, sharing=raw_sharing)
        return
    plan = place(raw_apps, raw_nodes, sharing=raw_sharing)
    apps, nodes, sharing = parse_apps(raw_apps), parse_nodes(raw_nodes), parse_sharing(raw_sharing)
    assert feasible(apps, nodes, plan.assignment)
    before = by_pairs(apps, nodes, blind.assignment, sharing)
    after = by_pairs(apps, nodes, plan.assignment, sharing)
    assert after <= before + 1e-9
    assert plan.method.endswith("+time-sharing")
    report = plan.report()["time_sharing"]
    assert report["score"] == pytest.approx(after, abs=1e-6)


@settings(max_examples=20, deadline=None)
@given(shared_instances(max_replicas=16, max_nodes=6))
def test_without_a_declared_demand_nothing_changes(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    raw_apps, raw_nodes, sharing = instance
    try:
        plain = place(raw_apps, raw_nodes, sharing=sharing)
    except UnschedulableError:
        return
    zero = place([dict(item, cpu_demand="0") for item in raw_apps], raw_nodes, sharing=sharing)
    assert zero.assignment == plain.assignment
    assert zero.report() == plain.report()
    assert "time_sharing" not in plain.report()


@settings(max_examples=30, deadline=None)
@given(shared_instances(max_replicas=20, max_nodes=6, capacity=False))
def test_on_nodes_that_are_never_oversubscribed_the_score_is_twice_the_pair_score(
    instance: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]],
) -> None:
    # Nodes without a CPU figure are never oversubscribed: every slowdown is 1 + the shared dot products.
    raw_apps, raw_nodes, sharing = instance
    plan = place([dict(item, cpu_demand="2") for item in raw_apps], raw_nodes, sharing=sharing)
    blind = place(raw_apps, raw_nodes, sharing=sharing)
    assert plan.report()["time_sharing"]["score"] == pytest.approx(2 * plan.total_interference, abs=1e-6)
    assert plan.total_interference <= blind.total_interference + 1e-9
    assert plan.report()["time_sharing"]["oversubscribed"] == []


def test_a_shared_memory_bus_puts_the_memory_apps_together_on_an_oversubscribed_worker() -> None:
    # kind's two 1-CPU workers, four 1-core apps: each worker time-shares two apps whatever the plan. Apart,
    # the memory apps run at the same instant on the shared bus; together, they take turns.
    plan = place(seed_apps(**ONE_CORE_EACH), workers("1"), sharing=MEMORY_SHARED)
    assert residents(plan.report()) == [{"mbw", "stressapptest"}, {"c-ray", "compress-7zip"}]
    report = plan.report()["time_sharing"]
    assert report["predicted_slowdown"] == {"c-ray": 2.0, "compress-7zip": 2.0, "mbw": 2.0, "stressapptest": 2.0}
    assert [entry["node"] for entry in report["oversubscribed"]] == ["worker", "worker1"]
    assert not plan.proven_optimal


@pytest.mark.parametrize(
    ("cpus", "sharing", "why"),
    [
        ("2", MEMORY_SHARED, "2 CPUs each: no time-sharing, so together they would contend all the time"),
        ("1", None, "nothing shared across workers: apart and together both score 4"),
        ("1", {"label": "kubernetes.io/os", "pressures": {"memory_bandwidth": 0.0}}, "a share of 0"),
    ],
)
def test_the_memory_apps_stay_apart_where_together_does_not_lower_the_score(
    cpus: str, sharing: dict[str, Any] | None, why: str
) -> None:
    plan = place(seed_apps(**ONE_CORE_EACH), workers(cpus), sharing=sharing)
    assert residents(plan.report()) == [{"c-ray", "mbw"}, {"compress-7zip", "stressapptest"}], why


def test_a_demand_is_counted_only_for_the_apps_that_declare_it() -> None:
    # Only mbw declares a core: no worker is oversubscribed, and the plan is the engine's usual one.
    plan = place(seed_apps(mbw="1"), workers("1"), sharing=MEMORY_SHARED)
    assert plan.report()["time_sharing"]["oversubscribed"] == []
    assert residents(plan.report()) == [{"c-ray", "mbw"}, {"compress-7zip", "stressapptest"}]


@pytest.mark.parametrize(
    ("demand", "words"),
    [("lots", "not a CPU quantity 'lots'"), ("-1", "not a CPU quantity '-1'"), (True, "not a CPU quantity true")],
)
def test_a_bad_demand_is_an_error_naming_the_app_and_the_field(demand: object, words: str) -> None:
    apps = seed_apps()
    apps[2]["cpu_demand"] = demand
    with pytest.raises(AppInputError) as raised:
        place(apps, workers("1"))
    message = str(raised.value)
    assert "mbw" in message
    assert "cpu_demand" in message
    assert words in message

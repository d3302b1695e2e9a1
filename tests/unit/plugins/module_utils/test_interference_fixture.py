"""The interference numbers of the engine match the shared fixture.

tests/fixtures/interference_cases.json is also read by the Go plugin
(scheduler-plugins/pkg/interference), so the engine that plans placements and
the InterferenceAware plugin of kube-scheduler give the same added
interference for the same pods. A pod's profile is read by the pod contract
(plugins/module_utils/contract.py, which the extender uses): a valid
`interference.orchestrator/profile` annotation, else the
`interference.orchestrator/type` label.

Cases with `sharing` add pods on the cluster's other nodes: the engine's plan
score (same-node pairs plus sharing.py's cross-node pairs) and the extender's
prioritize input (interference_extender.decisions.added_interference) must
both rise by `expected` when the pod joins the candidate node.

Cases with `time_sharing` give nodes CPUs and pods a CPU demand: the engine's
time-shared score (timesharing.slowdowns, the sum of slowdown - 1) and the
extender's input when a demand is declared (decisions.added_time_shared)
must both rise by `expected`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils import contract
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import profile_mapping
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    Profile,
    dot,
    node_interference,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import find_collisions
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import parse_sharing, sharing_score
from ansible_collections.interference.orchestrator.plugins.module_utils.timesharing import slowdowns

from interference_extender.decisions import added_interference, added_time_shared
from interference_extender.facts import PodIndex, known_nodes_from, pod_facts
from tests.support.k8s_objects import make_node, make_pod, serialise

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "interference_cases.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]
TIME_SHARING_CASES = [case for case in CASES if case.get("time_sharing")]
SAME_NODE_CASES = [case for case in CASES if "sharing" not in case and not case.get("time_sharing")]
SHARING_CASES = [case for case in CASES if "sharing" in case and not case.get("time_sharing")]


def pod_profile(pod: dict[str, Any]) -> Profile | None:
    """The pod's profile as the extender reads it (the pod contract), None when it has no usable one."""
    return contract.pod_profile(pod.get("annotations") or {}, pod.get("labels") or {})


def test_fixture_has_cases_of_every_kind() -> None:
    expected = [case["expected"] for case in CASES]
    assert None in expected
    assert any(value and value > 0 for value in expected)
    assert 0.0 in expected


@pytest.mark.parametrize("case", SAME_NODE_CASES, ids=[case["name"] for case in SAME_NODE_CASES])
def test_added_interference_matches_the_fixture(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    if case["expected"] is None:
        # Neutral: no profile, or one that presses on nothing (`{}`, what the
        # apps role writes for an all-zero profile), which adds zero everywhere.
        assert profile is None or not any(profile)
        return
    assert profile is not None
    others = [p for p in map(pod_profile, case["node_pods"]) if p is not None]
    # The plugin's formula (sum of dot products with the pods already there) ...
    added = sum(dot(profile, other) for other in others)
    assert math.isclose(added, case["expected"], abs_tol=1e-9)
    # ... is the increase of the engine's node interference.
    increase = node_interference([*others, profile]) - node_interference(others)
    assert math.isclose(increase, case["expected"], abs_tol=1e-9)


def test_fixture_has_sharing_cases_of_every_kind() -> None:
    expected = [case["expected"] for case in SHARING_CASES]
    assert None in expected
    assert 0.0 in expected
    # Some case's answer differs from the same-node score: the cross-node term is really exercised.
    assert any(
        case["expected"] is not None
        and not math.isclose(case["expected"], _same_node(case), abs_tol=1e-9)
        for case in SHARING_CASES
    )


def _same_node(case: dict[str, Any]) -> float:
    profile = pod_profile(case["pod"]) or ()
    return sum(dot(profile, other) for other in map(pod_profile, case["node_pods"]) if other is not None)


def _cluster(case: dict[str, Any]) -> list[tuple[str, dict[str, str], list[dict[str, Any]]]]:
    """(name, labels, pods) per node: the candidate first, then the case's other nodes."""
    nodes = [("candidate", case.get("node_labels") or {}, case["node_pods"])]
    nodes += [(f"other-{i}", other.get("labels") or {}, other["pods"]) for i, other in enumerate(case["other_nodes"])]
    return nodes


def _engine_score(case: dict[str, Any], with_pod: bool) -> float:
    """The engine's score of the cluster as a plan (one single-replica app per profiled pod)."""
    cluster = _cluster(case)
    nodes = parse_nodes([{"name": name, "labels": labels} for name, labels, _ in cluster])
    residents = [
        (profile, node_index)
        for node_index, (_, _, pods) in enumerate(cluster)
        for profile in map(pod_profile, pods)
        if profile is not None and any(profile)  # a pod that presses on nothing adds nothing
    ]
    if with_pod:
        residents.append((pod_profile(case["pod"]) or (), 0))
    if not residents:
        return 0.0
    apps = parse_apps([
        {"name": f"app-{i}", "image": "x", "profile": profile_mapping(profile)}
        for i, (profile, _) in enumerate(residents)
    ])
    assignment = [[node_index] for _, node_index in residents]
    same_node = sum(find_collisions(apps, nodes, assignment).by_node)
    return same_node + sharing_score(apps, nodes, assignment, parse_sharing(case["sharing"]))["total"]


@pytest.mark.parametrize("case", SHARING_CASES, ids=[case["name"] for case in SHARING_CASES])
def test_the_engines_plan_score_rises_by_the_fixtures_cross_node_answer(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    if case["expected"] is None:
        assert profile is None or not any(profile)
        return
    assert profile is not None
    increase = _engine_score(case, with_pod=True) - _engine_score(case, with_pod=False)
    assert math.isclose(increase, case["expected"], abs_tol=1e-9)


@pytest.mark.parametrize("case", SHARING_CASES, ids=[case["name"] for case in SHARING_CASES])
def test_the_extenders_score_input_is_the_fixtures_cross_node_answer(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    if case["expected"] is None:
        assert profile is None
        return
    assert profile is not None
    index = PodIndex()
    node_objects = []
    for node_index, (name, labels, pods) in enumerate(_cluster(case)):
        node_objects.append(serialise(make_node(name, labels=labels)))
        for pod_index, pod in enumerate(pods):
            index.upsert(pod_facts(serialise(make_pod(
                f"p{node_index}-{pod_index}", node_name=name,
                pod_type=(pod.get("labels") or {}).get(contract.TYPE_LABEL), annotations=pod.get("annotations"),
            ))))
    known = known_nodes_from(node_objects)
    # The candidate as kube-scheduler sends it (full node list) and as the view knows it (nodeCacheCapable).
    for candidate in (known["candidate"], None):
        added = added_interference(
            profile, [("candidate", candidate, None)], index, known, parse_sharing(case["sharing"])
        )
        assert added == [pytest.approx(case["expected"], abs=1e-9)]


def test_fixture_has_time_sharing_cases_of_every_kind() -> None:
    # Oversubscribed nodes, a node with room, one that does not say its CPUs, and a shared host.
    assert {case.get("node_cpu") for case in TIME_SHARING_CASES} >= {"1", "2", None}
    assert any("sharing" in case for case in TIME_SHARING_CASES)
    assert 0.0 in [case["expected"] for case in TIME_SHARING_CASES]


def _demand(pod: dict[str, Any]) -> int:
    return contract.pod_cpu_demand(pod.get("annotations") or {})


def _time_shared_cluster(case: dict[str, Any]) -> list[tuple[str, dict[str, str], str | None, list[dict[str, Any]]]]:
    """(name, labels, CPUs, pods) per node: the candidate first, then the case's other nodes."""
    nodes = [("candidate", case.get("node_labels") or {}, case.get("node_cpu"), case["node_pods"])]
    nodes += [
        (f"other-{i}", other.get("labels") or {}, other.get("cpu"), other["pods"])
        for i, other in enumerate(case.get("other_nodes", []))
    ]
    return nodes


def _time_shared_score(case: dict[str, Any], with_pod: bool) -> float:
    """The engine's time-shared score of the cluster as a plan (one single-replica app per pod)."""
    cluster = _time_shared_cluster(case)
    nodes = parse_nodes([
        {"name": name, "labels": labels, **({"allocatable": {"cpu": cpu}} if cpu else {})}
        for name, labels, cpu, _ in cluster
    ])
    residents = [(pod, node_index) for node_index, (*_, pods) in enumerate(cluster) for pod in pods]
    if with_pod:
        residents.append((case["pod"], 0))
    apps = parse_apps([
        {
            "name": f"app-{i}", "image": "x", "profile": profile_mapping(pod_profile(pod) or ()),
            **({"cpu_demand": f"{_demand(pod)}m"} if _demand(pod) else {}),
        }
        for i, (pod, _) in enumerate(residents)
    ])
    assignment = [[node_index] for _, node_index in residents]
    sharing = parse_sharing(case.get("sharing"))
    return sum(value - 1 for per_app in slowdowns(apps, nodes, assignment, sharing) for value in per_app)


@pytest.mark.parametrize("case", TIME_SHARING_CASES, ids=[case["name"] for case in TIME_SHARING_CASES])
def test_the_engines_time_shared_score_rises_by_the_fixtures_answer(case: dict[str, Any]) -> None:
    increase = _time_shared_score(case, with_pod=True) - _time_shared_score(case, with_pod=False)
    assert math.isclose(increase, case["expected"], abs_tol=1e-9)


@pytest.mark.parametrize("case", TIME_SHARING_CASES, ids=[case["name"] for case in TIME_SHARING_CASES])
def test_the_extenders_time_shared_input_is_the_fixtures_answer(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    assert profile is not None
    index = PodIndex()
    node_objects = []
    for node_index, (name, labels, cpu, pods) in enumerate(_time_shared_cluster(case)):
        node_objects.append(serialise(make_node(name, labels=labels, cpu=cpu)))
        for pod_index, pod in enumerate(pods):
            index.upsert(pod_facts(serialise(make_pod(
                f"p{node_index}-{pod_index}", node_name=name,
                pod_type=(pod.get("labels") or {}).get(contract.TYPE_LABEL), annotations=pod.get("annotations"),
            ))))
    known = known_nodes_from(node_objects)
    kind = (profile, _demand(case["pod"]))
    for candidate in (known["candidate"], None):
        added = added_time_shared(
            kind, [("candidate", candidate, None)], index, known, parse_sharing(case.get("sharing"))
        )
        assert added == [pytest.approx(case["expected"], abs=1e-9)]

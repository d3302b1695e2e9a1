"""The extender decides the shared scheduling cases as the Go plugins do.

tests/fixtures/scheduling_cases.json is also read by the Go plugins' tests
(scheduler-plugins/pkg/decisiontable), so a case that one path decides
differently fails both suites. Each case runs through the extender's decision
code (filter, then prioritize over the nodes that passed) with the default
policy, in both of kube-scheduler's modes: full Node objects and names only
(nodeCacheCapable).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interference_extender.decisions import filter_nodes, parse_extender_args, prioritize_nodes
from interference_extender.facts import APP_LABEL, PodIndex, known_nodes_from, pod_facts
from interference_extender.policy import ExtenderPolicy

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "scheduling_cases.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]
GPU = "nvidia.com/gpu"


def pod_object(name: str, spec: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    """A fixture pod as API JSON: its app is the app.kubernetes.io/name label, `gpus` its GPU limit."""
    labels = dict(spec.get("labels") or {})
    if spec.get("app"):
        labels[APP_LABEL] = spec["app"]
    container: dict[str, Any] = {"name": "main", "image": "x"}
    if spec.get("gpus"):
        container["resources"] = {"limits": {GPU: str(spec["gpus"])}}
    pod_spec: dict[str, Any] = {"containers": [container]}
    if node is not None:
        pod_spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels,
                     "annotations": dict(spec.get("annotations") or {})},
        "spec": pod_spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def node_object(spec: dict[str, Any]) -> dict[str, Any]:
    """A fixture node as API JSON: `gpus` in capacity and allocatable."""
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    if spec.get("gpus"):
        resources[GPU] = str(spec["gpus"])
    return {
        "metadata": {"name": spec["name"], "labels": dict(spec.get("labels") or {})},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


def decide(case: dict[str, Any], node_cache_capable: bool) -> tuple[list[str], list[str]]:
    """(feasible nodes, best nodes) as the extender decides them, each sorted by name."""
    nodes = [node_object(spec) for spec in case["nodes"]]
    index = PodIndex()
    for node, pods in case["node_pods"].items():
        for i, spec in enumerate(pods):
            index.upsert(pod_facts(pod_object(f"{node}-{i}", spec, node)))
    pod = pod_object("incoming", case["pod"])
    known = known_nodes_from(nodes)
    policy = ExtenderPolicy()

    def args(candidates: list[dict[str, Any]]) -> Any:
        if node_cache_capable:
            body = {"Pod": pod, "NodeNames": [n["metadata"]["name"] for n in candidates]}
        else:
            body = {"Pod": pod, "Nodes": {"metadata": {}, "items": candidates}}
        # As the service decodes it from the wire.
        return parse_extender_args(json.loads(json.dumps(body)))

    filtered = filter_nodes(args(nodes), index, known, policy)
    if node_cache_capable:
        feasible = filtered["NodeNames"]
    else:
        feasible = [n["metadata"]["name"] for n in filtered["Nodes"]["items"]]
    if not feasible:
        return [], []
    priorities = prioritize_nodes(args([n for n in nodes if n["metadata"]["name"] in feasible]), index, known, policy)
    top = max(entry["Score"] for entry in priorities)
    return sorted(feasible), sorted(entry["Host"] for entry in priorities if entry["Score"] == top)


def test_fixture_covers_the_four_policies_and_bad_profiles() -> None:
    covered = {policy for case in CASES for policy in case["policies"]}
    assert covered == {"gpu", "spot", "zone", "interference", "malformed"}
    assert any(len(case["policies"]) >= 2 for case in CASES)
    assert any(not case["expected"]["feasible"] for case in CASES)
    assert any(len(case["expected"]["best"]) < len(case["expected"]["feasible"]) for case in CASES)


@pytest.mark.parametrize("node_cache_capable", [False, True], ids=["full-node-list", "nodeCacheCapable"])
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_extender_decides_the_shared_case(case: dict[str, Any], node_cache_capable: bool) -> None:
    feasible, best = decide(case, node_cache_capable)
    assert feasible == case["expected"]["feasible"]
    assert best == case["expected"]["best"]

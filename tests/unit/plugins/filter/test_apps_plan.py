"""The filters the apps role calls once per run: plan_apps, placement_table, deployed_apps,
placement_mismatches, natural_sort; imported by their collection path, as Ansible loads them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.deployed_apps import deployed_apps
from ansible_collections.interference.orchestrator.plugins.filter.natural_sort import natural_sort
from ansible_collections.interference.orchestrator.plugins.filter.placement_mismatches import placement_mismatches
from ansible_collections.interference.orchestrator.plugins.filter.placement_table import placement_table
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps

NODES = ["w1", "w2"]
APPS: list[dict[str, Any]] = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "CPU", "replicas": 2},
    {"name": "tuned", "image": "pts/mbw", "profile": {"llc": 0.5, "disk_io": 1}},
    {"name": "mbw", "image": "pts/mbw", "type": "memory", "scheduler": "extender"},
]


def test_plan_apps_gives_each_app_its_nodes_type_label_and_profile() -> None:
    plan = plan_apps(APPS, NODES)
    by_name = {entry["name"]: entry for entry in plan["apps"]}
    assert [entry["name"] for entry in plan["apps"]] == ["c-ray", "tuned", "mbw"]
    normalised = {**APPS[0], "type": "cpu"}
    assert by_name["c-ray"] == {
        "name": "c-ray",
        "app": normalised,
        "extender": False,
        "scheduler": None,
        "nodes": ["w1", "w2"],
        "type_label": "cpu",
        "profile": {"cpu": 1.0},
        "profile_annotation": '{"cpu":1.0}',
        "cpu_demand_annotation": None,
        "annotations": {
            "interference.orchestrator/planned-nodes": "w1,w2",
            "interference.orchestrator/app": json.dumps(normalised, sort_keys=True),
        },
    }
    assert by_name["tuned"]["type_label"] == "custom"
    assert json.loads(by_name["tuned"]["profile_annotation"]) == {"llc": 0.5, "disk_io": 1.0}
    assert by_name["mbw"]["extender"] is True
    assert by_name["mbw"]["nodes"] == []
    assert by_name["mbw"]["profile_annotation"] == '{"memory_bandwidth":1.0}'
    assert [node["apps"] for node in plan["report"]["nodes"]] == [["c-ray", "tuned"], ["c-ray"]]


def test_plan_apps_checks_extender_apps_and_names_the_index_in_the_input() -> None:
    bad = [{"name": "ext", "image": "x", "type": "cpu", "scheduler": "extender"}, {"name": "bad", "image": "x"}]
    with pytest.raises(AnsibleFilterError, match=r"^apps\[1\] \(bad\): field 'type': missing"):
        plan_apps(bad, NODES)
    with pytest.raises(AnsibleFilterError, match=r"^apps\[0\] \(ext\): field 'type': unknown type 'gpu'"):
        plan_apps([{"name": "ext", "image": "x", "type": "gpu", "scheduler": "extender"}], NODES)


def test_plan_apps_with_only_extender_apps_has_an_empty_report() -> None:
    plan = plan_apps([APPS[2]], NODES)
    assert plan["report"]["total_interference"] == 0
    assert plan["report"]["pairs"] == []
    assert plan["report"]["warning"] is None


def test_plan_apps_strict_fails_on_unavoidable_interference() -> None:
    crowded = [{"name": name, "image": "x", "type": "cpu"} for name in ("a", "b", "c")]
    assert plan_apps(crowded, NODES)["report"]["warning"]
    with pytest.raises(AnsibleFilterError, match=r"^strict placement: zero interference is impossible"):
        plan_apps(crowded, NODES, strict=True)


def test_placement_table_lines() -> None:
    crowded: list[dict[str, Any]] = [
        {"name": "a", "image": "x", "type": "cpu", "replicas": 2},
        {"name": "b", "image": "x", "type": "cpu"},
        {"name": "m", "image": "x", "type": "memory", "scheduler": "extender"},
    ]
    lines = placement_table(plan_apps(crowded, ["w1"]), "my-scheduler", sources={"b": "observed"})
    assert lines[:4] == [
        "APP  TYPE    PROFILE   NODE                    INTERFERENCE",
        "a    cpu     declared  w1 (2 replicas)         3",
        "b    cpu     observed  w1                      2",
        "m    memory  declared  chosen by my-scheduler  -",
    ]
    assert lines[4].startswith("WARNING: zero interference is impossible with these nodes: total interference 3")
    assert lines[5] == "Total interference: 3"


def deployment(name: str, planned: str | None, item: str | None) -> dict[str, Any]:
    annotations = {}
    if planned is not None:
        annotations["interference.orchestrator/planned-nodes"] = planned
    if item is not None:
        annotations["interference.orchestrator/app"] = item
    return {"metadata": {"name": name, "annotations": annotations}}


def test_plugins_apps_are_left_to_the_plugins_scheduler_and_named_in_the_table() -> None:
    apps = [
        {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
        {"name": "trainer", "image": "example/trainer", "type": "cpu", "scheduler": "plugins"},
        {"name": "mbw", "image": "pts/mbw", "type": "memory", "scheduler": "extender"},
    ]
    plan = plan_apps(apps, NODES)
    by_name = {entry["name"]: entry for entry in plan["apps"]}
    assert (by_name["trainer"]["extender"], by_name["trainer"]["scheduler"], by_name["trainer"]["nodes"]) == (
        True, "plugins", [],
    )
    assert by_name["mbw"]["scheduler"] == "extender"
    assert by_name["c-ray"]["nodes"] and by_name["c-ray"]["scheduler"] is None
    # Only the pinned app is in the engine's plan.
    assert [node["apps"] for node in plan["report"]["nodes"] if node["apps"]] == [["c-ray"]]
    table = placement_table(plan, "interference-scheduler", "gpu-scheduler")
    rows = [line.split() for line in table]
    assert ["trainer", "cpu", "declared", "chosen", "by", "gpu-scheduler", "-"] in rows
    assert ["mbw", "memory", "declared", "chosen", "by", "interference-scheduler", "-"] in rows


def test_deployed_apps_reads_previous_and_unlisted() -> None:
    deployments = [
        deployment("c-ray", "w1,gone", '{"name": "c-ray"}'),
        deployment("old", "gone", '{"name": "old", "image": "x", "type": "cpu"}'),
        deployment("ext", None, '{"name": "ext", "scheduler": "extender"}'),
    ]
    state = deployed_apps(deployments, NODES, ["c-ray", "ext"])
    assert state == {
        "managed": ["c-ray", "old", "ext"],
        "previous": {"c-ray": ["w1"]},
        "unlisted": [{"name": "old", "image": "x", "type": "cpu"}],
    }


def test_deployed_apps_bad_input_names_the_object_and_field() -> None:
    with pytest.raises(AnsibleFilterError, match=r"^resources\[0\] \(old\): field "
                       r"'metadata.annotations.interference.orchestrator/app': is not JSON"):
        deployed_apps([deployment("old", None, "{oops")], NODES, [])
    with pytest.raises(AnsibleFilterError, match=r"^resources\[1\]: field 'metadata': not a Kubernetes object"):
        deployed_apps([deployment("a", None, None), {"kind": "Deployment"}], NODES, [])


def pod(app: str, node: str | None, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"{app}-x", "labels": {"app.kubernetes.io/name": app}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": node} if node else {}}


def test_placement_mismatches_names_apps_off_their_plan() -> None:
    plan = plan_apps(APPS, NODES)
    right = [pod("c-ray", "w1"), pod("c-ray", "w2"), pod("tuned", "w1"), pod("mbw", "w2")]
    assert placement_mismatches(right, plan) == []
    assert placement_mismatches([*right, pod("tuned", "w2", deleting=True)], plan) == []
    wrong = [pod("c-ray", "w1"), pod("c-ray", "w1"), pod("tuned", None)]
    assert placement_mismatches(wrong, plan) == [
        "c-ray: planned on w1, w2, runs on w1, w1",
        "tuned: planned on w1, runs on no node",
    ]
    assert placement_mismatches([], plan) == [
        "c-ray: planned on w1, w2, runs on no pod",
        "tuned: planned on w1, runs on no pod",
    ]


def test_natural_sort_orders_as_kind_numbers_workers() -> None:
    names = ["k-worker10", "k-worker2", "k-worker", "k-control-plane", "k-worker3"]
    assert natural_sort(names) == ["k-control-plane", "k-worker", "k-worker2", "k-worker3", "k-worker10"]
    with pytest.raises(AnsibleFilterError, match=r"^nodes: field 'names': must be a list of node names"):
        natural_sort("k-worker")  # type: ignore[arg-type]


def test_rebalance_with_a_move_limit_moves_only_that_many_running_replicas() -> None:
    apps = [{"name": f"c{i}", "image": "x", "type": "cpu"} for i in range(3)]
    previous = {"c0": ["w1"], "c1": ["w1"], "c2": ["w1"]}
    nodes = ["w1", "w2", "w3"]
    one = plan_apps(apps, nodes, previous=previous, rebalance=True, max_moves=1)
    assert sorted(n for entry in one["apps"] for n in entry["nodes"]) == ["w1", "w1", "w2"]
    assert [m["app"] for m in one["report"]["moved"]] == ["c0"]
    every = plan_apps(apps, nodes, previous=previous, rebalance=True, max_moves=5)
    assert sorted(n for entry in every["apps"] for n in entry["nodes"]) == ["w1", "w2", "w3"]
    assert len(every["report"]["moved"]) == 2
    with pytest.raises(AnsibleFilterError, match=r"max_moves.*must be a whole number from 0 to 10,000"):
        plan_apps(apps, nodes, previous=previous, rebalance=True, max_moves=-1)

"""The filter plugins, imported by their collection path (errors become Ansible errors)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.nodes_from_k8s import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.filter.place import FilterModule, place
from ansible_collections.interference.orchestrator.plugins.filter.placement_report import placement_report
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps

APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
]


def test_registered_under_its_name() -> None:
    assert FilterModule().filters()["place"] is place


def test_place_adds_nodes() -> None:
    placed = place(APPS, ["w1", "w2"])
    assert sorted(item["nodes"][0] for item in placed) == ["w1", "w2"]


def test_report_matches_place() -> None:
    report = placement_report(APPS, ["w1", "w2"])
    assert report["total_interference"] == 0
    assert {n["name"]: n["apps"] for n in report["nodes"]} == {
        n: [item["name"]] for item in place(APPS, ["w1", "w2"]) for n in item["nodes"]
    }


def test_engine_errors_become_filter_errors() -> None:
    with pytest.raises(AnsibleFilterError, match=r"apps\[1\] \(compress-7zip\): field 'type': unknown type 'gpu'"):
        place([APPS[0], dict(APPS[1], type="gpu")], ["w1"])
    with pytest.raises(AnsibleFilterError, match="not a Kubernetes Node object"):
        nodes_from_k8s([{"kind": "Pod"}])


def test_the_filters_are_pure_and_return_the_warning_instead_of_printing_it(capsys: pytest.CaptureFixture[str]) -> None:
    crowded = [dict(APPS[0]), dict(APPS[1])]
    place(crowded, ["w1"])
    report = placement_report(crowded, ["w1"])
    plan = plan_apps(crowded, ["w1"])
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "")
    assert report["warning"].startswith("zero interference is impossible")
    assert plan["report"]["warning"] == report["warning"]


def test_place_and_the_report_take_sharing_and_a_bad_one_is_a_filter_error() -> None:
    """Two memory apps, w1 and w2 on one host sharing memory bandwidth at 0.5, w3 alone: one goes to w3."""
    apps = [{"name": "mbw", "image": "pts/mbw", "type": "memory"},
            {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"}]
    nodes = [{"name": "w1", "labels": {"host": "a"}}, {"name": "w2", "labels": {"host": "a"}}, {"name": "w3"}]
    sharing = {"label": "host", "pressures": {"memory_bandwidth": 0.5}}
    assert sorted(item["nodes"][0] for item in place(apps, nodes)) == ["w1", "w2"]
    assert sorted(item["nodes"][0] for item in place(apps, nodes, sharing=sharing)) == ["w1", "w3"]
    report = placement_report(apps, nodes, sharing=sharing)
    assert report["cross_node_interference"] == 0
    assert report["sharing"] == {"label": "host", "pressures": {"memory_bandwidth": 0.5}}
    with pytest.raises(AnsibleFilterError, match=r"field 'sharing.pressures.memory_bandwidth': must be a number"):
        place(apps, nodes, sharing={"label": "host", "pressures": {"memory_bandwidth": "half"}})

"""Running profiles, hot nodes, budgets, moves and the report of playbooks/rebalance.yml (plugin_utils/running.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.plugin_utils.running import (
    RebalanceError,
    check_settings,
    held_by_budgets,
    hot_nodes,
    moved_apps,
    queries,
    report,
    running_profiles,
    with_profiles,
)

SETTINGS = {"threshold": 0.5, "window_s": 60, "max_moves": 1, "namespace": "interference-apps"}
RESOURCES = ("cpu", "llc", "memory_bandwidth")


def vector(samples: list[tuple[dict[str, str], float]]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": m, "value": [1.0, str(v)]} for m, v in samples]}}


def pressures(values: dict[str, dict[str, float]]) -> dict[str, Any]:
    return vector([({"node": n, "resource": r}, v) for n, by in values.items() for r, v in by.items()])


def pod(name: str, app: str, node: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app.kubernetes.io/name": app}, **meta},
            "spec": {"nodeName": node}}


# Two busy loops on w1 (one declared memory), an idle app on w2.
HELD = {"w1": {"cpu": 0.7, "llc": 0.05, "memory_bandwidth": 0.1},
        "w2": {"cpu": 0.02, "llc": 0.0, "memory_bandwidth": 0.01}}
MEAN = {"w1": {"cpu": 0.8, "llc": 0.1, "memory_bandwidth": 0.12},
        "w2": {"cpu": 0.05, "llc": 0.02, "memory_bandwidth": 0.02}}
PODS = [pod("a-1", "a", "w1"), pod("b-1", "b", "w1"), pod("idle-1", "idle", "w2"),
        pod("a-old", "a", "w2", deletionTimestamp="2026-12-07T00:00:00Z")]
ANSWERS = {"pressure_held": pressures(HELD), "pressure_mean": pressures(MEAN),
           "app_cpu": vector([({"pod": "a-1"}, 0.3), ({"pod": "b-1"}, 0.1), ({"pod": "idle-1"}, 0.0),
                              ({"pod": "a-old"}, 0.2)])}
APPS = [{"name": "a", "image": "x", "type": "cpu"}, {"name": "b", "image": "x", "type": "memory"},
        {"name": "idle", "image": "x", "type": "memory"}]


@pytest.mark.parametrize(("change", "message"), [
    ({"threshold": 0}, "'threshold': expected a number above 0"),
    ({"threshold": 1.5}, "'threshold': expected a number from 0 to 1"),
    ({"threshold": True}, "'threshold'"),
    ({"window_s": 10}, "'window_s': expected a whole number from 20 to 86400"),
    ({"window_s": 60.5}, "'window_s'"),
    ({"max_moves": -1}, "'max_moves': expected a whole number from 0 to 100"),
    ({"namespace": ""}, "'namespace'"),
])
def test_settings_out_of_range_are_refused_naming_the_setting(change: dict[str, Any], message: str) -> None:
    with pytest.raises(RebalanceError, match=message):
        check_settings({**SETTINGS, **change})


def test_the_queries_read_the_window_and_the_namespace() -> None:
    found = queries(SETTINGS)
    assert found["pressure_held"] == "min_over_time(interference_probe_pressure[60s])"
    assert found["pressure_mean"] == "avg_over_time(interference_probe_pressure[60s])"
    assert 'namespace="interference-apps"' in found["app_cpu"] and "[60s]" in found["app_cpu"]


def test_a_node_is_hot_only_when_the_windows_minimum_reached_the_threshold() -> None:
    assert hot_nodes(ANSWERS, ["w1", "w2"], 0.5) == {"w1": {"cpu": 0.7}}
    assert hot_nodes(ANSWERS, ["w1", "w2"], 0.71) == {}
    # Nodes that are not workers (the control plane) never count.
    assert hot_nodes(ANSWERS, ["w2"], 0.5) == {}


def test_the_nodes_pressure_is_shared_by_cpu_use_and_a_busy_app_declared_memory_comes_out_cpu() -> None:
    profiles = running_profiles(ANSWERS, PODS, ["a", "b", "idle"])
    assert profiles["a"]["profile"] == {"cpu": 0.6, "llc": 0.075, "memory_bandwidth": 0.09}
    assert profiles["b"]["profile"] == {"cpu": 0.2, "llc": 0.025, "memory_bandwidth": 0.03}
    assert profiles["a"]["class"] == profiles["b"]["class"] == "cpu"
    # Alone on its node, with no CPU use at all: the whole (small) pressure, and idle.
    assert profiles["idle"]["profile"] == {"cpu": 0.05, "llc": 0.02, "memory_bandwidth": 0.02}
    assert profiles["idle"]["class"] == "idle"
    # The pod being deleted is not counted.
    assert profiles["a"]["nodes"] == ["w1"] and profiles["a"]["cpu_cores"] == 0.3


@pytest.mark.parametrize(("answers", "pods", "message"), [
    ({**ANSWERS, "app_cpu": vector([({"pod": "a-1"}, 0.3), ({"pod": "idle-1"}, 0.0)])}, PODS,
     r"app b: no CPU series for its pod b-1 in Prometheus \(query app_cpu: sum by \(pod\)"),
    ({**ANSWERS, "pressure_mean": pressures({"w1": MEAN["w1"], "w2": {"cpu": 0.1}})}, PODS,
     r"app idle: no probe series for llc, memory_bandwidth on its node w2 \(query pressure_mean"),
    (ANSWERS, PODS[:2], r"app idle: no running pod of it"),
    ({**ANSWERS, "pressure_held": {"status": "error", "error": "bad_data"}}, PODS,
     r"Prometheus did not answer the query pressure_held .*bad_data"),
])
def test_a_missing_series_names_the_app_and_the_query(
    answers: dict[str, Any], pods: list[dict[str, Any]], message: str,
) -> None:
    with pytest.raises(RebalanceError, match=message):
        running_profiles(answers, pods, ["a", "b", "idle"])
        hot_nodes(answers, ["w1", "w2"], 0.5)


def test_with_running_profiles_the_engine_separates_two_busy_apps_that_their_types_call_compatible() -> None:
    nodes = ["w1", "w2"]
    previous = {"a": ["w1"], "b": ["w1"], "idle": ["w2"]}
    declared = plan_apps(APPS, nodes, previous=previous, rebalance=True, max_moves=1, move_from=["w1"])
    assert moved_apps(declared, previous) == []
    profiles = running_profiles(ANSWERS, PODS, ["a", "b", "idle"])
    planned = with_profiles(APPS, profiles)
    assert planned[1]["type"] == "memory" and planned[1]["profile"]["cpu"] == 0.2
    plan = plan_apps(planned, nodes, previous=previous, rebalance=True, max_moves=1, move_from=["w1"])
    # The smaller CPU user leaves the hot node: the move that lowers the predicted total most.
    assert moved_apps(plan, previous) == [{"app": "b", "from": ["w1"], "to": ["w2"]}]
    # Nothing on a node that is not hot moves, and from the new placement nothing moves again.
    assert moved_apps(plan_apps(planned, nodes, previous=previous, rebalance=True, max_moves=1, move_from=["w2"]),
                      previous) == []
    settled = {"a": ["w1"], "b": ["w2"], "idle": ["w2"]}
    assert moved_apps(plan_apps(planned, nodes, previous=settled, rebalance=True, max_moves=1,
                                move_from=["w1", "w2"]), settled) == []


def test_moves_come_in_the_engines_order_and_apps_left_to_a_scheduler_never_count() -> None:
    plan = {"apps": [{"name": "x", "extender": False, "nodes": ["n2"]}, {"name": "y", "extender": False,
                                                                        "nodes": ["n1"]},
                     {"name": "z", "extender": True, "nodes": []}, {"name": "w", "extender": False, "nodes": ["n1"]}],
            "report": {"moved": [{"app": "y"}, {"app": "x"}, {"app": "y"}]}}
    previous = {"x": ["n1"], "y": ["n2"], "z": ["n1"], "w": ["n1"]}
    assert [m["app"] for m in moved_apps(plan, previous)] == ["y", "x"]


def test_an_app_a_budget_allows_no_disruption_of_is_held() -> None:
    pods = [pod("a-1", "a", "w1"), pod("b-1", "b", "w1"), pod("c-1", "c", "w1")]
    pods[1]["metadata"]["labels"]["tier"] = "db"
    budgets = [
        {"metadata": {"name": "for-a"}, "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "a"}}},
         "status": {"disruptionsAllowed": 0}},
        {"metadata": {"name": "db"}, "spec": {"selector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["db"]}]}}, "status": {"disruptionsAllowed": 0}},
        {"metadata": {"name": "loose"}, "spec": {"selector": {}}, "status": {"disruptionsAllowed": 1}},
        {"metadata": {"name": "none"}, "spec": {"selector": None}, "status": {"disruptionsAllowed": 0}},
        {"metadata": {"name": "not-db"}, "spec": {"selector": {"matchExpressions": [
            {"key": "tier", "operator": "DoesNotExist"}, {"key": "app.kubernetes.io/name", "operator": "NotIn",
                                                          "values": ["a"]}]}},
         "status": {"disruptionsAllowed": 0}},
    ]
    assert held_by_budgets(budgets, pods, ["a", "b", "c"]) == {"a": "for-a", "b": "db", "c": "not-db"}
    assert held_by_budgets(budgets[2:4], pods, ["a", "b", "c"]) == {}


def test_the_report_is_derived_from_results_json_alone() -> None:
    results = json.loads(json.dumps({
        "started": "2026-12-07T04:00:00Z", "config": SETTINGS, "workers": ["w1", "w2"], "apps": ["a", "b", "idle"],
        "before": {"time": 1.0, "answers": ANSWERS}, "pods": PODS, "held_by_budgets": {},
        "plan": {"moves": [{"app": "b", "from": ["w1"], "to": ["w2"]}], "predicted_before": 0.1263,
                 "predicted_after": 0.0},
        "applied": True, "after": {"time": 2.0, "answers": {"pressure_mean": pressures(
            {"w1": {"cpu": 0.6, "llc": 0.1, "memory_bandwidth": 0.1}, "w2": {"cpu": 0.5, "llc": 0.1,
                                                                            "memory_bandwidth": 0.1}})}},
    }))
    text = report(results)
    assert "| w1 | cpu | 0.700 (hot) | 0.800 | 0.600 |" in text
    assert "| w2 | cpu | 0.020 | 0.050 | 0.500 |" in text
    assert "Hot nodes: w1." in text
    assert "| b | w1 | 0.100 | 0.200 | 0.025 | 0.030 | cpu |" in text
    assert "- b: w1 -> w2" in text
    assert "0.1263 before, 0 after" in text
    assert "window ending 1970-01-01 00:00:02 UTC" in text
    assert report({**results, "plan": {**results["plan"], "moves": []}, "after": None, "applied": False}).count(
        "- none") == 1


def test_the_stored_kind_rebalance_report_is_its_results_json_rederived() -> None:
    stored = Path(__file__).resolve().parents[4] / "docs" / "monitoring" / "rebalance-kind-2026-12-07"
    results = json.loads((stored / "results.json").read_text())
    assert report(results) == (stored / "report.md").read_text()
    assert [m["app"] for m in results["plan"]["moves"]] == ["spin-cpu"]


def test_the_error_names_the_query_as_it_was_asked() -> None:
    asked = queries(SETTINGS)
    answers = {**ANSWERS, "app_cpu": vector([({"pod": "a-1"}, 0.3), ({"pod": "idle-1"}, 0.0)])}
    with pytest.raises(RebalanceError) as failure:
        running_profiles(answers, PODS, ["a", "b", "idle"], promql=asked)
    assert f"app b: no CPU series for its pod b-1 in Prometheus (query app_cpu: {asked['app_cpu']})" in str(
        failure.value)
    assert "{namespace}" not in str(failure.value)

"""Unit tests of the placement engine: semantics, constraints, stability, errors."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import (
    AppInputError,
    InterferenceError,
    NodeInputError,
    UnschedulableError,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    interference_lower_bound,
    profile_for_type,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place, placed_apps

SEED_APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "CPU"},
    {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "Memory"},
    {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
]


def app(name: str, kind: str = "cpu", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": f"img/{name}", "type": kind, **extra}


def node(name: str, cpu: str | None = None, memory: str | None = None, pods: str | None = None,
         gpus: str | None = None, **labels: str) -> dict[str, Any]:
    allocatable = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("pods", pods), ("nvidia.com/gpu", gpus)) if v}
    return {"name": name, "labels": labels, "allocatable": allocatable}


def nodes_of(plan_apps: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {item["name"]: item["nodes"] for item in plan_apps}


class TestSeedScenario:
    def test_two_cpu_two_memory_on_two_nodes_do_not_interfere(self) -> None:
        plan = place(SEED_APPS, ["w1", "w2"])
        placed = nodes_of(placed_apps(SEED_APPS, plan))
        assert placed["c-ray"] != placed["compress-7zip"]
        assert placed["mbw"] != placed["stressapptest"]
        assert plan.total_interference == 0
        assert plan.report()["pairs"] == []
        assert plan.warning() is None

    def test_output_keeps_input_order_and_fields(self) -> None:
        items = [dict(a, env={"INDEX": i}) for i, a in enumerate(SEED_APPS)]
        placed = placed_apps(items, place(items, ["w1", "w2"]))
        assert [p["name"] for p in placed] == [a["name"] for a in SEED_APPS]
        assert [p["env"] for p in placed] == [{"INDEX": i} for i in range(4)]
        assert all(len(p["nodes"]) == 1 for p in placed)

    def test_three_cpu_apps_on_two_nodes_collide_once_and_warn(self) -> None:
        apps = [app("a"), app("b"), app("c")]
        plan = place(apps, ["w1", "w2"])
        assert plan.total_interference == 1
        assert plan.lower_bound == 1
        assert plan.proven_optimal
        warning = plan.warning()
        assert warning is not None and "zero interference is impossible" in warning
        pair = plan.report()["pairs"][0]
        assert pair["reason"] == "both stress cpu (1 x 1)"

    def test_strict_turns_the_warning_into_an_error(self) -> None:
        with pytest.raises(InterferenceError, match="strict placement: zero interference is impossible"):
            place([app("a"), app("b"), app("c")], ["w1", "w2"], strict=True)

    def test_strict_passes_when_interference_free(self) -> None:
        assert place(SEED_APPS, ["w1", "w2"], strict=True).total_interference == 0


class TestProfiles:
    def test_profile_dot_product(self) -> None:
        apps = [
            {"name": "a", "image": "i", "profile": {"cpu": 0.5, "llc": 1}},
            {"name": "b", "image": "i", "profile": {"llc": 0.5, "disk_io": 1}},
        ]
        plan = place(apps, ["only"])
        assert plan.total_interference == pytest.approx(0.5)
        assert "llc (1 x 0.5)" in plan.report()["pairs"][0]["reason"]

    def test_type_is_shorthand_for_one_hot_profile(self) -> None:
        assert profile_for_type("CPU") == (1.0, 0.0, 0.0, 0.0, 0.0)
        assert profile_for_type("memory") == (0.0, 1.0, 0.0, 0.0, 0.0)

    def test_lower_bound_for_one_hot_counts(self) -> None:
        cpu = profile_for_type("cpu")
        # 5 cpu replicas on 2 nodes: 3 + 2 -> 3 + 1 pairs.
        assert interference_lower_bound([cpu] * 5, 2) == 4


class TestConstraints:
    def test_requests_fit_allocatable(self) -> None:
        apps = [app("big", resources={"requests": {"cpu": "1500m", "memory": "1Gi"}}),
                app("also-big", "memory", resources={"requests": {"cpu": "1", "memory": "1Gi"}})]
        plan = place(apps, [node("w1", cpu="2", memory="4Gi"), node("w2", cpu="2", memory="4Gi")])
        placed = nodes_of(placed_apps(apps, plan))
        # Interference-free would allow both on one node, but 2.5 cores do not fit there.
        assert placed["big"] != placed["also-big"]

    def test_pods_limit(self) -> None:
        apps = [app("a"), app("b", "memory")]
        placed = nodes_of(placed_apps(apps, place(apps, [node("w1", pods="1"), node("w2", pods="1")])))
        assert placed["a"] != placed["b"]

    def test_node_selector(self) -> None:
        apps = [app("a", node_selector={"disk": "ssd"}), app("b", node_selector={"disk": "ssd"})]
        nodes = [node("w1"), node("w2", disk="ssd")]
        placed = nodes_of(placed_apps(apps, place(apps, nodes)))
        assert placed == {"a": ["w2"], "b": ["w2"]}

    def test_pin(self) -> None:
        apps = [app("a", node="w2"), app("b")]
        placed = nodes_of(placed_apps(apps, place(apps, ["w1", "w2"])))
        assert placed == {"a": ["w2"], "b": ["w1"]}

    def test_gpus_only_on_gpu_nodes(self) -> None:
        apps = [app("train", gpus=1), app("infer", "memory", gpus=2)]
        nodes = [node("cpu-only"), node("gpu", gpus="2"), node("gpu-big", gpus="4")]
        placed = nodes_of(placed_apps(apps, place(apps, nodes)))
        assert placed["train"][0] in {"gpu", "gpu-big"}
        assert placed["infer"][0] in {"gpu", "gpu-big"}

    def test_replicas_spread_over_distinct_nodes(self) -> None:
        apps = [app("web", "memory", replicas=3)]
        placed = nodes_of(placed_apps(apps, place(apps, ["w1", "w2", "w3", "w4"])))
        assert len(set(placed["web"])) == 3

    def test_more_replicas_than_nodes_spread_evenly(self) -> None:
        apps = [app("web", replicas=5)]
        placed = nodes_of(placed_apps(apps, place(apps, ["w1", "w2"])))
        assert sorted(placed["web"].count(n) for n in ("w1", "w2")) == [2, 3]

    def test_ties_balance_requested_load(self) -> None:
        apps = [app("heavy", "cpu", resources={"requests": {"cpu": "3"}}),
                app("light", "memory", resources={"requests": {"cpu": "100m"}}),
                app("next", "memory", resources={"requests": {"cpu": "100m"}})]
        placed = nodes_of(placed_apps(apps, place(apps, [node("w1", cpu="4"), node("w2", cpu="4")])))
        # heavy goes first; the memory apps avoid each other, and the first one avoids the loaded node.
        assert placed["light"] != placed["heavy"]
        assert placed["next"] != placed["light"]

    def test_deterministic(self) -> None:
        apps = [app(f"a{i}", "cpu" if i % 3 else "memory", replicas=1 + i % 2) for i in range(30)]
        nodes = [node(f"w{i}", cpu="8", pods="20") for i in range(7)]
        first = place(apps, nodes).assignment
        assert all(place(apps, nodes).assignment == first for _ in range(3))


class TestStability:
    def test_adding_an_app_moves_no_running_one(self) -> None:
        before = placed_apps(SEED_APPS, place(SEED_APPS, ["w1", "w2"]))
        previous = {item["name"]: item["nodes"] for item in before}
        # Flip what the engine would choose today, to show previous wins over optimality.
        previous["c-ray"], previous["compress-7zip"] = previous["compress-7zip"], previous["c-ray"]
        more = [*SEED_APPS, app("blender")]
        after = nodes_of(placed_apps(more, place(more, ["w1", "w2"], previous=previous)))
        for name, nodes in previous.items():
            assert after[name] == nodes

    def test_previous_that_no_longer_fits_is_moved_and_reported(self) -> None:
        apps = [app("a", node_selector={"zone": "b"})]
        plan = place(apps, [node("w1", zone="a"), node("w2", zone="b")], previous={"a": ["w1"]})
        assert plan.node_names(0) == ["w2"]
        assert plan.report()["moved"] == [{"app": "a", "from": "w1", "reason": "missing label zone=b", "to": ["w2"]}]

    def test_rebalance_ignores_previous(self) -> None:
        apps = [app("a"), app("b")]
        stuck = place(apps, ["w1", "w2"], previous={"a": ["w1"], "b": ["w1"]})
        assert stuck.total_interference == 1
        assert "rebalance=true may lower it" in (stuck.warning() or "")
        assert place(apps, ["w1", "w2"], previous={"a": ["w1"], "b": ["w1"]}, rebalance=True).total_interference == 0

    def test_previous_of_removed_app_is_ignored(self) -> None:
        assert place([app("a")], ["w1"], previous={"gone": ["w1"]}).node_names(0) == ["w1"]

    def test_scaling_up_keeps_existing_replicas(self) -> None:
        plan = place([app("web", replicas=3)], ["w1", "w2", "w3"], previous={"web": ["w3"]})
        assert plan.node_names(0)[0] == "w3"
        assert sorted(plan.node_names(0)) == ["w1", "w2", "w3"]


class TestBadInput:
    @pytest.mark.parametrize(
        ("apps", "pattern"),
        [
            ([{"image": "x", "type": "cpu"}], r"apps\[0\]: field 'name': missing"),
            ([{"name": "web", "type": "cpu"}], r"apps\[0\] \(web\): field 'image': missing"),
            ([app("web"), app("db"), app("web")], r"apps\[2\] \(web\): field 'name': duplicate: apps\[0\]"),
            ([app("Web_1")], r"apps\[0\] \(Web_1\): field 'name': 'Web_1' is not a DNS-1123 label"),
            ([app("web", "gpu")], r"apps\[0\] \(web\): field 'type': unknown type 'gpu'"),
            ([{"name": "web", "image": "x"}], r"apps\[0\] \(web\): field 'type': missing"),
            ([app("web", replicas=0)],
             r"apps\[0\] \(web\): field 'replicas': must be a whole number from 1 to 10,000, got 0"),
            ([app("web", replicas=1.5)], r"field 'replicas': must be a whole number from 1 to 10,000, got 1.5"),
            ([app("web", replicas="two")], r"field 'replicas': must be a whole number from 1 to 10,000, got 'two'"),
            ([app("web", resources={"requests": {"cpu": "lots"}})],
             r"apps\[0\] \(web\): field 'resources.requests.cpu': not a Kubernetes quantity 'lots'"),
            ([app("web", resources={"requests": {"memory": "1Gx"}})], r"field 'resources.requests.memory'"),
            ([{"name": "web", "image": "x", "profile": {"gpu": 1}}], r"field 'profile.gpu': unknown resource"),
            ([{"name": "web", "image": "x", "profile": {"cpu": 2}}],
             r"field 'profile.cpu': must be a number from 0 to 1"),
            ([app("web", node="nowhere")], r"apps\[0\] \(web\): field 'node': unknown node 'nowhere'"),
        ],
    )
    def test_app_errors_name_app_and_field(self, apps: list[dict[str, Any]], pattern: str) -> None:
        with pytest.raises(AppInputError, match=pattern):
            place(apps, ["w1", "w2"])

    def test_unknown_node_in_previous(self) -> None:
        with pytest.raises(AppInputError, match=r"apps\[0\] \(web\): field 'previous': unknown node 'w9'"):
            place([app("web")], ["w1"], previous={"web": ["w9"]})

    def test_empty_nodes(self) -> None:
        with pytest.raises(NodeInputError, match="the node list is empty"):
            place([app("web")], [])

    def test_bad_node_quantity(self) -> None:
        with pytest.raises(NodeInputError, match=r"nodes\[0\] \(w1\): field 'allocatable.cpu'"):
            place([app("web")], [node("w1", cpu="many")])

    def test_app_that_fits_no_node_explains_per_node(self) -> None:
        apps = [app("web", resources={"requests": {"cpu": "4"}}, node_selector={"disk": "ssd"})]
        nodes = [node("w1", cpu="2", disk="ssd"), node("w2", cpu="8"), node("w3", cpu="8")]
        with pytest.raises(UnschedulableError) as error:
            place(apps, nodes)
        assert str(error.value) == "0/3 nodes fit web: 2 missing label disk=ssd, 1 insufficient cpu"

    def test_capacity_exhausted_by_earlier_apps(self) -> None:
        apps = [app(name, resources={"requests": {"memory": "3Gi"}}) for name in ("a", "b")]
        with pytest.raises(UnschedulableError, match="0/1 nodes fit b: 1 insufficient memory"):
            place(apps, [node("w1", memory="4Gi")])


class TestNodesFromK8s:
    def test_converts_node_objects_and_skips_cordoned(self) -> None:
        resources = [
            {"metadata": {"name": "w1", "labels": {"group": "node1"}},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "1"}}},
            {"metadata": {"name": "w2"}, "spec": {"unschedulable": True}, "status": {"allocatable": {}}},
        ]
        assert nodes_from_k8s(resources) == [
            {"name": "w1", "labels": {"group": "node1"}, "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        ]
        plan = place([app("web", resources={"requests": {"cpu": "4"}})], nodes_from_k8s(resources))
        assert plan.node_names(0) == ["w1"]

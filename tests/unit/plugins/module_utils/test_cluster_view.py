"""Nodes and capacity as kube-scheduler sees them: taints and tolerations, NotReady nodes, other pods' requests.

Read from Node and Pod objects (nodes_from_k8s), kept by the engine's one
feasibility rule, rendered into the pod spec (manifests.py) and reported
(placement.left_out, the apps role's table). Bad tolerations and limits below
requests are refused naming the app and the field.
"""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import (
    pod_requests,
    requested_by_node,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import (
    AppInputError,
    ClusterObjectError,
    UnschedulableError,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
from ansible_collections.interference.orchestrator.plugins.module_utils.schema import tolerates
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_table import placement_table

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SETTINGS = {"namespace": "apps", "command": ["sleep", "1"]}


def app(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "img", "type": "cpu", **fields}


def node(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, **fields}


def node_object(name: str, taints: list[Any] | None = None, ready: str | None = "True",
                allocatable: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": allocatable or {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if ready is not None:
        status["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    return {"metadata": {"name": name, "labels": {"group": name}}, "spec": {"taints": taints or []}, "status": status}


def pod(name: str, node_name: str | None, cpu: str = "0", *, namespace: str = "default", phase: str = "Running",
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": body,
            "status": {"phase": phase}}


class TestTaints:
    @pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
    def test_a_blocking_taint_keeps_apps_off_unless_tolerated(self, effect: str) -> None:
        nodes = [node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": effect}]), node("plain")]
        plan = place([app("a"), app("b")], nodes)
        assert plan.node_names(0) == plan.node_names(1) == ["plain"]
        tolerant = app("b", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": effect}])
        plan = place([app("a"), tolerant], nodes)
        assert plan.node_names(1) == ["tainted"], "the tolerant app takes the node where it has no neighbour"

    def test_prefer_no_schedule_does_not_block(self) -> None:
        nodes = [node("soft", taints=[{"key": "spot", "effect": "PreferNoSchedule"}]), node("plain")]
        plan = place([app("a"), app("b")], nodes)
        assert sorted(plan.node_names(0) + plan.node_names(1)) == ["plain", "soft"]

    def test_no_node_tolerated_says_which_taint(self) -> None:
        with pytest.raises(UnschedulableError) as failure:
            place([app("a")], [node("g", taints=[GPU_TAINT])])
        assert str(failure.value) == "0/1 nodes fit a: 1 untolerated taint nvidia.com/gpu=present:NoSchedule"

    @pytest.mark.parametrize(
        ("toleration", "taint", "expected"),
        [
            (("", "Exists", "", ""), ("any", "x", "NoExecute"), True),
            (("k", "Exists", "", ""), ("k", "whatever", "NoSchedule"), True),
            (("k", "Exists", "", "NoSchedule"), ("k", "", "NoExecute"), False),
            (("k", "Equal", "v", ""), ("k", "v", "NoSchedule"), True),
            (("k", "Equal", "v", ""), ("k", "w", "NoSchedule"), False),
            (("k", "Equal", "", ""), ("k", "", "NoSchedule"), True),
            (("other", "Exists", "", ""), ("k", "", "NoSchedule"), False),
        ],
    )
    def test_toleration_matching_is_kubernetes(self, toleration: Any, taint: Any, expected: bool) -> None:
        assert tolerates(toleration, taint) is expected

    def test_tolerations_reach_the_pod_spec_and_pass_the_schema(self) -> None:
        tolerations = [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "value": 7, "effect": "NoExecute", "tolerationSeconds": 30},
        ]
        plan = plan_apps([app("a", tolerations=tolerations)], [node("g", taints=[GPU_TAINT])], deployment=SETTINGS)
        [manifest] = plan["manifests"]
        kubernetes_validate.validate(manifest, "1.34.0", strict=True)
        assert manifest["spec"]["template"]["spec"]["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "7", "effect": "NoExecute", "tolerationSeconds": 30},
        ]
        assert plan["apps"][0]["nodes"] == ["g"]


BAD_TOLERATIONS: list[tuple[Any, str]] = [
    ("NoSchedule", "field 'tolerations': must be a list of tolerations, got 'NoSchedule'"),
    (["x"], "field 'tolerations[0]': must be a mapping of toleration field"),
    ([{"key": "k", "operator": "exists"}], "field 'tolerations[0].operator': 'exists' is not one of Exists, Equal "
                                           "(Kubernetes spells it 'Exists')"),
    ([{"key": "k", "operator": "Exists", "value": "v"}], "field 'tolerations[0].value': must be empty when"),
    ([{"operator": "Equal", "value": "v"}], "field 'tolerations[0].operator': must be Exists when `key` is empty"),
    ([{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}],
     "field 'tolerations[0].tolerationSeconds': is only allowed with `effect: NoExecute`"),
    ([{"key": "k", "effect": "NoExecute", "tolerationSeconds": "5"}],
     "field 'tolerations[0].tolerationSeconds': must be a whole number of seconds, got '5'"),
    ([{"key": "k", "effect": "Never"}], "field 'tolerations[0].effect': 'Never' is not one of NoSchedule"),
    ([{"key": "bad key!", "operator": "Exists"}], "field 'tolerations[0].key': 'bad key!' is not a label key"),
    ([{"key": "k", "oprator": "Exists"}], "field 'tolerations[0].oprator': unknown field; did you mean 'operator'?"),
    ([{}], "field 'tolerations[0]': must be a mapping with at least"),
]


@pytest.mark.parametrize(("tolerations", "message"), BAD_TOLERATIONS, ids=[m.split(":")[0] for _, m in BAD_TOLERATIONS])
def test_a_bad_toleration_names_the_app_and_the_field(tolerations: Any, message: str) -> None:
    with pytest.raises(AppInputError) as failure:
        place([app("ok"), app("web", tolerations=tolerations)], [node("w")])
    assert str(failure.value).startswith(f"apps[1] (web): {message}"), str(failure.value)


@pytest.mark.parametrize(
    ("resources", "field", "problem"),
    [
        ({"requests": {"cpu": "500m"}, "limits": {"cpu": "100m"}}, "resources.limits.cpu",
         "'100m' is below the request '500m'"),
        ({"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}}, "resources.limits.memory",
         "'512Mi' is below the request '1Gi'"),
        ({"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 1}}, "resources.limits.nvidia.com/gpu",
         "1 is below the request 2"),
    ],
)
def test_limits_below_requests_are_refused_naming_app_and_field(resources: Any, field: str, problem: str) -> None:
    with pytest.raises(AppInputError) as failure:
        place([app("web", resources=resources)], [node("w")])
    assert str(failure.value).startswith(f"apps[0] (web): field '{field}': {problem}"), str(failure.value)


def test_limits_equal_to_or_above_requests_are_fine() -> None:
    resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "0.5", "memory": "2Gi"}}
    assert place([app("web", resources=resources)], [node("w")]).node_names(0) == ["w"]


class TestNotReady:
    def test_nothing_goes_to_a_not_ready_node_and_kept_replicas_move(self) -> None:
        nodes = [node("down", ready=False), node("up")]
        plan = place([app("a")], nodes, previous={"a": ["down"]})
        assert plan.node_names(0) == ["up"]
        assert plan.moved == [{"app": "a", "from": "down", "reason": "not ready", "to": ["up"]}]

    def test_nodes_from_k8s_reads_ready_and_taints(self) -> None:
        taints = [{**GPU_TAINT, "timeAdded": "2026-01-01T00:00:00Z"}, {"key": "spot", "effect": "PreferNoSchedule"}]
        nodes = nodes_from_k8s([
            node_object("a", taints=taints), node_object("b", ready="Unknown"), node_object("c", ready=None),
        ])
        assert nodes[0]["taints"] == [GPU_TAINT, {"key": "spot", "effect": "PreferNoSchedule"}]
        assert "ready" not in nodes[0]
        assert nodes[1]["ready"] is False
        assert "ready" not in nodes[2] and "taints" not in nodes[2], "no conditions: the taint rule decides"

    def test_a_malformed_taint_is_named(self) -> None:
        with pytest.raises(ClusterObjectError) as failure:
            nodes_from_k8s([node_object("a", taints=[{"key": "k", "effect": "Sometimes"}])])
        assert str(failure.value).startswith("resources[0] (a): field 'spec.taints[0].effect': 'Sometimes' is not")


class TestOtherPods:
    def test_requests_of_pods_not_managed_are_summed_per_node(self) -> None:
        managed = {"app.kubernetes.io/managed-by": "interference.orchestrator", "app.kubernetes.io/name": "x"}
        pods = [
            pod("a", "n1", cpu="1"),
            pod("b", "n1", cpu="500m", namespace="kube-system"),
            pod("pending", None, cpu="3"),
            pod("done", "n1", cpu="3", phase="Succeeded"),
            pod("mine", "n1", cpu="3", namespace="apps", labels=managed),
            # The extender carries the managed-by label too, but it is not an app pod of apps_namespace.
            pod("extender", "n2", cpu="250m", namespace="kube-system", labels=managed),
        ]
        assert requested_by_node(pods, "apps") == {"n1": {"pods": 2, "cpu": "1500m"}, "n2": {"pods": 1, "cpu": "250m"}}

    def test_pod_requests_count_init_containers_sidecars_and_overhead(self) -> None:
        spec: dict[object, object] = {
            "containers": [{"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}, {"resources": {}}],
            "initContainers": [
                {"resources": {"requests": {"cpu": "2"}}},
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
                {"resources": {"requests": {"memory": "1Gi"}}},
            ],
            "overhead": {"cpu": "10m"},
        }
        requests = pod_requests(spec)
        # cpu: max(100m + 200m sidecar, 2 init) + 10m overhead; memory: max(64Mi, 1Gi init).
        assert requests["cpu"] * 1000 == 2010
        assert requests["memory"] == 1024**3

    def test_the_plan_fits_what_other_pods_leave_free(self) -> None:
        objects = [node_object("busy"), node_object("idle")]
        pods = [pod("tenant", "busy", cpu="3600m")]
        nodes = nodes_from_k8s(objects, pods, "apps")
        assert nodes[0]["requested"] == {"pods": 1, "cpu": "3600m"}
        small = app("small", resources={"requests": {"cpu": "300m"}})
        crowd = [app("other", resources={"requests": {"cpu": "300m"}}), small]
        plan = place(crowd, nodes)
        assert sorted(plan.node_names(0) + plan.node_names(1)) == ["busy", "idle"], "400m is free on busy"
        big = app("big", resources={"requests": {"cpu": "500m"}})
        with pytest.raises(UnschedulableError) as failure:
            place([big], nodes[:1])
        assert str(failure.value) == "0/1 nodes fit big: 1 insufficient cpu"
        # Without the pods, the same node holds it: the subtraction is what refuses it.
        assert place([big], nodes_from_k8s(objects[:1])).node_names(0) == ["busy"]

    def test_a_malformed_pod_is_named(self) -> None:
        bad = pod("p", "n1")
        bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
        with pytest.raises(ClusterObjectError) as failure:
            nodes_from_k8s([node_object("n1")], [pod("ok", "n1"), bad], "apps")
        assert str(failure.value).startswith("pods[1] (p): field 'spec.containers[0].resources.requests.cpu'")


def test_the_report_and_the_table_say_why_a_node_was_left_out() -> None:
    nodes = [
        node("down", ready=False),
        node("gpu", taints=[GPU_TAINT]),
        node("busy", requested={"cpu": "3900m"}),
        node("spare"),
        node("w1"),
    ]
    apps = [app("a", resources={"requests": {"cpu": "200m"}}), app("b", type="memory")]
    plan = plan_apps(apps, nodes)
    # b requests no cpu, so busy is not full for it.
    assert plan["report"]["left_out"] == [
        {"node": "down", "reason": "NotReady"},
        {"node": "gpu", "reason": "tainted nvidia.com/gpu=present:NoSchedule, which no app tolerates"},
    ]
    apps[1]["resources"] = {"requests": {"cpu": "150m"}}
    table = placement_table(plan_apps(apps, nodes), "interference-scheduler")
    assert "LEFT OUT: down: NotReady" in table
    assert "LEFT OUT: gpu: tainted nvidia.com/gpu=present:NoSchedule, which no app tolerates" in table
    assert "LEFT OUT: busy: full: 100m cpu free, the smallest app requests 150m" in table
    assert not any("spare" in line and "LEFT OUT" in line for line in table), "not needed is not left out"

"""The extender's decisions, on ExtenderArgs bodies built from real Kubernetes objects.

Every body is made of kubernetes client models (V1Pod, V1Node) serialised as
the API server does, and round-tripped through JSON, so the tests see exactly
the bytes kube-scheduler would send.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    CPU_DEMAND_ANNOTATION,
    PROFILE_ANNOTATION,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dot, profile_for_type
from kubernetes import client

from interference_extender.decisions import (
    MAX_EXTENDER_PRIORITY,
    MIN_EXTENDER_PRIORITY,
    ExtenderInputError,
    added_interference,
    filter_nodes,
    parse_extender_args,
    prioritize_nodes,
)
from interference_extender.facts import PodIndex, gpu_memory_bytes, known_nodes_from, pod_facts
from interference_extender.policy import ExtenderConfigError, ExtenderPolicy, ScoreWeights, policy_from_mapping
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise

MODES = pytest.mark.parametrize("cache", [False, True], ids=["full-node-list", "nodeCacheCapable"])


def wire(body: dict[str, Any]) -> Any:
    """The body as the service decodes it from the wire."""
    return json.loads(json.dumps(body))


def index_of(*pods: client.V1Pod) -> PodIndex:
    index = PodIndex()
    for pod in pods:
        index.upsert(pod_facts(wire(serialise(pod))))
    return index


def view_of(nodes: list[client.V1Node]) -> dict[str, Any]:
    return known_nodes_from(wire(serialise(nodes)))


def decide(
    verb: str,
    pod: client.V1Pod,
    nodes: list[client.V1Node],
    cache: bool,
    *,
    pods: PodIndex | None = None,
    policy: ExtenderPolicy | None = None,
    known: list[client.V1Node] | None = None,
) -> Any:
    args = parse_extender_args(wire(extender_args(pod, nodes, node_cache_capable=cache)))
    view = view_of(nodes if known is None else known)
    call = filter_nodes if verb == "filter" else prioritize_nodes
    return call(args, pods or PodIndex(), view, policy or ExtenderPolicy())


def passed(result: dict[str, Any]) -> list[str]:
    if result["NodeNames"] is not None:
        assert result["Nodes"] is None
        return result["NodeNames"]
    return [item["metadata"]["name"] for item in result["Nodes"]["items"]]


def scores(result: list[dict[str, Any]]) -> dict[str, int]:
    return {entry["Host"]: entry["Score"] for entry in result}


# -- the wire format


def test_keys_match_case_insensitively_as_go_decodes_them() -> None:
    body = wire(extender_args(make_pod("p"), [make_node("a"), make_node("b")], node_cache_capable=False))
    lowered = {"pod": body["Pod"], "NODES": body["Nodes"], "nodenames": None}
    args = parse_extender_args(lowered)
    assert [n["metadata"]["name"] for n in args.nodes or []] == ["a", "b"]
    assert not args.node_cache_capable
    named = parse_extender_args({"pOd": body["Pod"], "nodeNames": ["a"]})
    assert named.node_names == ["a"]


def test_full_node_list_answer_carries_node_objects_and_no_names() -> None:
    result = decide("filter", make_pod("p"), [make_node("a"), make_node("b")], cache=False)
    assert result["NodeNames"] is None
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["a", "b"]
    # The node objects go back as they came (kube-scheduler rebuilds NodeInfo from them).
    assert result["Nodes"]["items"][0]["status"]["capacity"]["cpu"] == "8"
    assert set(result) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def test_node_cache_capable_answer_carries_names_only() -> None:
    result = decide("filter", make_pod("p"), [make_node("a"), make_node("b")], cache=True)
    assert result["Nodes"] is None
    assert result["NodeNames"] == ["a", "b"]


def test_empty_node_list_as_go_encodes_it() -> None:
    args = parse_extender_args({"Pod": serialise(make_pod("p")), "Nodes": {"metadata": {}, "items": None}})
    assert args.nodes == []
    assert filter_nodes(args, PodIndex(), {}, ExtenderPolicy())["Nodes"]["items"] == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ([], "^ExtenderArgs: expected a JSON object, got a list$"),
        ({"Nodes": {"items": []}}, "^Pod: expected a Pod object, got null$"),
        ({"Pod": {}}, "neither Nodes nor NodeNames"),
        ({"Pod": {}, "NodeNames": "a"}, "^NodeNames: expected a list, got a string$"),
        ({"Pod": {}, "NodeNames": ["a", 3]}, r"^NodeNames\[1\]: expected a node name, got a number$"),
        ({"Pod": {}, "Nodes": []}, "^Nodes: expected a NodeList object, got a list$"),
        ({"Pod": {}, "Nodes": {"items": ["a"]}}, r"^Nodes.items\[0\]: expected a Node object, got a string$"),
        ({"Pod": {}, "Nodes": {"items": [None]}}, r"^Nodes.items\[0\]: expected a Node object, got null$"),
    ],
)
def test_bodies_that_are_not_extender_args_are_refused(body: Any, problem: str) -> None:
    with pytest.raises(ExtenderInputError, match=problem):
        parse_extender_args(body)


# -- filter


@MODES
@pytest.mark.parametrize("gpu_in", ["limits", "requests"])
def test_gpu_pods_only_on_nodes_with_gpu_capacity(cache: bool, gpu_in: str) -> None:
    nodes = [make_node("plain"), make_node("gpu", gpus=2), make_node("plain2")]
    result = decide("filter", make_pod("trainer", gpus=1, gpu_in=gpu_in), nodes, cache)
    assert passed(result) == ["gpu"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"plain", "plain2"}
    assert "no nvidia.com/gpu capacity" in result["FailedAndUnresolvableNodes"]["plain"]
    assert result["FailedNodes"] == {}


@MODES
def test_pods_without_gpus_may_use_any_node(cache: bool) -> None:
    nodes = [make_node("plain"), make_node("gpu", gpus=2)]
    assert passed(decide("filter", make_pod("web", pod_type="cpu"), nodes, cache)) == ["plain", "gpu"]


def test_unknown_node_names_fail_with_a_reason() -> None:
    known = [make_node("a")]
    result = decide("filter", make_pod("p"), [make_node("a"), make_node("ghost")], cache=True, known=known)
    assert result["NodeNames"] == ["a"]
    assert "ghost" in result["FailedNodes"]
    assert "not in the extender's view" in result["FailedNodes"]["ghost"]


@MODES
def test_forbidden_pair_rule_filters_nodes_with_that_neighbour(cache: bool) -> None:
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = index_of(
        make_pod("m1", pod_type="memory", node_name="a"),
        make_pod("c1", pod_type="cpu", node_name="b"),
    )
    policy = policy_from_mapping({"forbidden_pairs": [["memory", "memory"]]})
    result = decide("filter", make_pod("m2", pod_type="Memory"), nodes, cache, pods=pods, policy=policy)
    assert passed(result) == ["b", "c"]
    assert "may not share node a with pods of type memory" in result["FailedNodes"]["a"]
    # The same pods without the rule: every node passes.
    assert passed(decide("filter", make_pod("m2", pod_type="memory"), nodes, cache, pods=pods)) == ["a", "b", "c"]


def test_pods_of_other_schedulers_pass_through_untouched() -> None:
    pod = make_pod("other", gpus=1, scheduler_name="default-scheduler")
    result = decide("filter", pod, [make_node("plain"), make_node("ghost")], cache=True, known=[make_node("plain")])
    assert result["NodeNames"] == ["plain", "ghost"]
    assert result["FailedNodes"] == result["FailedAndUnresolvableNodes"] == {}


# -- prioritize


@MODES
def test_same_type_pods_prefer_nodes_without_that_type(cache: bool) -> None:
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = index_of(
        make_pod("c1", pod_type="cpu", node_name="a"),
        make_pod("c2", pod_type="cpu", node_name="a"),
        make_pod("c3", pod_type="cpu", node_name="b"),
        make_pod("m1", pod_type="memory", node_name="c"),
        make_pod("m2", pod_type="memory", node_name="c"),
    )
    result = scores(decide("prioritize", make_pod("new", pod_type="cpu"), nodes, cache, pods=pods))
    # c holds only memory pods (no interference), b one cpu pod, a two.
    assert result == {"c": MAX_EXTENDER_PRIORITY, "b": 5, "a": MIN_EXTENDER_PRIORITY}


def test_interference_is_the_engines_dot_product_with_the_node() -> None:
    pods = index_of(
        make_pod("c1", pod_type="cpu", node_name="a"),
        make_pod("m1", pod_type="memory", node_name="a"),
        make_pod("x", node_name="a", annotations={"interference.orchestrator/profile": '{"cpu": 0.5, "llc": 1}'}),
    )
    cpu = profile_for_type("cpu")
    expected = dot(cpu, profile_for_type("cpu")) + dot(cpu, profile_for_type("memory")) + 0.5
    assert pods.interference(cpu, "a") == pytest.approx(expected)
    assert pods.interference(cpu, "elsewhere") == 0.0


@MODES
def test_profile_only_pods_are_scored_by_their_profile_annotation(cache: bool) -> None:
    """A profile-only app's pods (type label `custom`) as the apps role writes them: the annotation decides."""
    def custom(name: str, profile: str, node: str | None = None) -> client.V1Pod:
        return make_pod(name, pod_type="custom", node_name=node, annotations={PROFILE_ANNOTATION: profile})

    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = index_of(
        custom("llc-heavy", '{"llc":1.0}', node="a"),
        make_pod("c1", pod_type="cpu", node_name="b"),
        make_pod("c2", pod_type="cpu", node_name="b"),
    )
    # Its own load on `a` counts against a typed pod too: none for cpu there.
    assert scores(decide("prioritize", make_pod("new", pod_type="cpu"), nodes, cache, pods=pods)) == {
        "a": MAX_EXTENDER_PRIORITY, "b": MIN_EXTENDER_PRIORITY, "c": MAX_EXTENDER_PRIORITY,
    }
    # A profile-only pod pressing on llc and cpu: a has llc 1, b cpu 2 x 0.5, c nothing.
    new = custom("new-custom", '{"cpu":0.5,"llc":0.5}')
    assert scores(decide("prioritize", new, nodes, cache, pods=pods)) == {
        "a": 5, "b": MIN_EXTENDER_PRIORITY, "c": MAX_EXTENDER_PRIORITY,
    }


@MODES
def test_a_pod_that_declares_a_cpu_demand_avoids_a_node_it_would_oversubscribe(cache: bool) -> None:
    """CPU time-sharing online: the same-node dot product prefers `a`; counting the CPUs prefers `b`.

    On `a` (1 CPU) a memory app already wants its one core: a second demanding pod makes both take turns
    (time-shared score +2, though the profiles do not overlap). On `b` (1 CPU) half a cpu pressure with no
    demand: the newcomer fits and only their pressures meet (+1).
    """
    def pod(name: str, profile: str, node: str | None = None, demand: str | None = None) -> client.V1Pod:
        annotations = {PROFILE_ANNOTATION: profile, **({CPU_DEMAND_ANNOTATION: demand} if demand else {})}
        return make_pod(name, pod_type="custom", node_name=node, annotations=annotations)

    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    residents = [pod("mem", '{"memory_bandwidth":1.0}', "a", "1000m"), pod("half", '{"cpu":0.5}', "b")]
    newcomer = pod("new", '{"cpu":1.0}', demand="1000m")
    assert scores(decide("prioritize", newcomer, nodes, cache, pods=index_of(*residents))) == {
        "a": MIN_EXTENDER_PRIORITY, "b": MAX_EXTENDER_PRIORITY,
    }
    # Without a demand anywhere nothing is time-shared: the dot product alone, which prefers `a`.
    plain = [pod("mem", '{"memory_bandwidth":1.0}', "a"), pod("half", '{"cpu":0.5}', "b")]
    assert scores(decide("prioritize", pod("new", '{"cpu":1.0}'), nodes, cache, pods=index_of(*plain))) == {
        "a": MAX_EXTENDER_PRIORITY, "b": MIN_EXTENDER_PRIORITY,
    }
    # A node whose CPUs the extender does not know is never oversubscribed: `a` is preferred again.
    unknown = [make_node("a", cpu=None), make_node("b", cpu="1")]
    assert scores(decide("prioritize", newcomer, unknown, cache, pods=index_of(*residents))) == {
        "a": MAX_EXTENDER_PRIORITY, "b": MIN_EXTENDER_PRIORITY,
    }


HOST = "topology.example.com/host"


@MODES
def test_with_sharing_pods_on_other_nodes_of_the_host_count_at_the_share(cache: bool) -> None:
    """The engine's `sharing` in the policy: memory bandwidth leaks across the nodes of one host at 0.5."""
    nodes = [make_node(name, labels={HOST: host}) for name, host in (("a1", "h1"), ("a2", "h1"), ("b1", "h2"))]
    pods = index_of(make_pod("m1", pod_type="memory", node_name="a1"), make_pod("c1", pod_type="cpu", node_name="b1"))
    new = make_pod("new", pod_type="memory")
    # Without sharing, a2 and b1 are alike: neither holds a memory pod.
    assert scores(decide("prioritize", new, nodes, cache, pods=pods)) == {"a1": 0, "a2": 10, "b1": 10}
    shared = policy_from_mapping({"sharing": {"label": HOST, "pressures": {"memory_bandwidth": 0.5}}})
    # With it, a2 shares a1's memory bus: 1 on a1, 0.5 on a2, 0 on b1 (its cpu pod shares nothing with memory).
    assert scores(decide("prioritize", new, nodes, cache, pods=pods, policy=shared)) == {"a1": 0, "a2": 5, "b1": 10}
    # A node the request leaves out (kube-scheduler's filters refused it) still loads its host.
    assert scores(decide("prioritize", new, nodes[1:], cache, pods=pods, policy=shared, known=nodes)) == {
        "a2": 0, "b1": 10,
    }
    # Resources the policy does not share never cross: a cpu pod sees only its own node.
    assert scores(decide("prioritize", make_pod("cpu", pod_type="cpu"), nodes, cache, pods=pods, policy=shared)) == {
        "a1": 10, "a2": 10, "b1": 0,
    }


def test_without_the_label_a_node_is_alone() -> None:
    names = ("a1", "lone", "a2")
    nodes = [make_node(name, labels={HOST: "h1"} if name != "lone" else None) for name in names]
    pods = index_of(
        make_pod("m1", pod_type="memory", node_name="a1"), make_pod("m2", pod_type="memory", node_name="lone")
    )
    shared = policy_from_mapping({"sharing": {"label": HOST, "pressures": {"memory_bandwidth": 1}}})
    candidates = [(name, None, None) for name in names]
    raw = added_interference(profile_for_type("memory"), candidates, pods, view_of(nodes), shared.sharing)
    # a1 and a2 see m1 fully (share 1); lone sees only its own m2, and a1 and a2 do not see m2.
    assert raw == [1.0, 1.0, 1.0]


def test_a_pod_without_a_valid_profile_annotation_falls_back_to_its_type_label() -> None:
    typed = make_pod("t", pod_type="memory", annotations={PROFILE_ANNOTATION: "not json"})
    assert pod_facts(wire(serialise(typed))).profile == profile_for_type("memory")
    custom = make_pod("u", annotations={PROFILE_ANNOTATION: '{"gpu": 1}'})
    assert pod_facts(wire(serialise(custom))).profile is None


def test_index_follows_updates_and_deletions() -> None:
    pods = index_of(make_pod("c1", pod_type="cpu", node_name="a"))
    moved = pod_facts(wire(serialise(make_pod("c1", pod_type="cpu", node_name="b"))))
    pods.upsert(moved)
    cpu = profile_for_type("cpu")
    assert (pods.interference(cpu, "a"), pods.interference(cpu, "b")) == (0.0, 1.0)
    finished = make_pod("c1", pod_type="cpu", node_name="b")
    finished.status = client.V1PodStatus(phase="Succeeded")
    pods.upsert(pod_facts(wire(serialise(finished))))
    assert len(pods) == 0
    assert pods.interference(cpu, "b") == 0.0


@MODES
def test_gpu_pods_prefer_more_gpu_memory(cache: bool) -> None:
    nodes = [make_node("small", gpus=1, gpu_memory="16384"), make_node("big", gpus=1, gpu_memory="80Gi")]
    policy = ExtenderPolicy(weights=ScoreWeights(interference=0, gpu_memory=1, spot=0, zone_spread=0))
    result = scores(decide("prioritize", make_pod("trainer", gpus=1), nodes, cache, policy=policy))
    assert result == {"small": MIN_EXTENDER_PRIORITY, "big": MAX_EXTENDER_PRIORITY}
    assert gpu_memory_bytes("16384") == 16 * 1024**3
    assert gpu_memory_bytes("not-a-size") is None


@MODES
def test_interruptible_pods_prefer_spot_capacity(cache: bool) -> None:
    nodes = [
        make_node("on-demand", labels={"karpenter.sh/capacity-type": "on-demand"}),
        make_node("karpenter-spot", labels={"karpenter.sh/capacity-type": "spot"}),
        make_node("eks-spot", labels={"eks.amazonaws.com/capacityType": "SPOT"}),
    ]
    tolerant = make_pod(
        "batch", tolerations=[client.V1Toleration(key="karpenter.sh/capacity-type", operator="Exists")]
    )
    result = scores(decide("prioritize", tolerant, nodes, cache))
    assert result == {"on-demand": 0, "karpenter-spot": 10, "eks-spot": 10}
    # A pod that does not say it tolerates interruption has no spot preference.
    assert set(scores(decide("prioritize", make_pod("web"), nodes, cache)).values()) == {MIN_EXTENDER_PRIORITY}


@MODES
def test_pods_of_one_app_spread_over_zones(cache: bool) -> None:
    nodes = [make_node("a1", zone="a"), make_node("a2", zone="a"), make_node("b1", zone="b"), make_node("c1", zone="c")]
    pods = index_of(
        make_pod("web-1", app="web", node_name="a1"),
        make_pod("web-2", app="web", node_name="b1"),
        make_pod("web-3", app="web", node_name="b1"),
        make_pod("db-1", app="db", node_name="c1"),
    )
    result = scores(decide("prioritize", make_pod("web-4", app="web"), nodes, cache, pods=pods))
    # Zone c has no web pod, a one (on a1, which also counts for a2), b two.
    assert result == {"c1": 10, "a1": 5, "a2": 5, "b1": 0}


def test_weights_combine_components_into_a_weighted_mean() -> None:
    nodes = [
        make_node("busy-spot", labels={"karpenter.sh/capacity-type": "spot"}),
        make_node("quiet-on-demand"),
    ]
    pods = index_of(make_pod("c1", pod_type="cpu", node_name="busy-spot"))
    pod = make_pod("new", pod_type="cpu", annotations={"interference.orchestrator/interruptible": "true"})
    heavy_interference = policy_from_mapping({"weights": {"interference": 3, "spot": 1}})
    heavy_spot = policy_from_mapping({"weights": {"interference": 1, "spot": 3}})
    assert scores(decide("prioritize", pod, nodes, cache=True, pods=pods, policy=heavy_interference)) == {
        "busy-spot": 2,  # round((3 * 0 + 1 * 10) / 4)
        "quiet-on-demand": 8,  # round((3 * 10 + 1 * 0) / 4)
    }
    assert scores(decide("prioritize", pod, nodes, cache=True, pods=pods, policy=heavy_spot)) == {
        "busy-spot": 8,
        "quiet-on-demand": 2,
    }


def test_unknown_nodes_score_the_minimum_and_scores_stay_in_range() -> None:
    nodes = [make_node("a"), make_node("ghost")]
    pods = index_of(make_pod("c1", pod_type="cpu", node_name="a"))
    result = decide("prioritize", make_pod("new", pod_type="cpu"), nodes, True, pods=pods, known=[make_node("a")])
    assert scores(result) == {"a": 10, "ghost": 0}
    assert all(isinstance(e["Score"], int) and 0 <= e["Score"] <= 10 for e in result)


# -- policy


def test_policy_defaults_and_validation() -> None:
    policy = policy_from_mapping(None)
    assert policy.weights == ScoreWeights()
    assert policy.scheduler_names == frozenset({"interference-scheduler"})
    assert policy_from_mapping({"scheduler_names": []}).decides_for(pod_facts(serialise(make_pod("p"))))
    for bad, problem in [
        ({"weights": {"interference": -1}}, "weights.interference"),
        ({"weights": {"noise": 1}}, "unknown weights"),
        ({"forbidden_pairs": [["cpu"]]}, "forbidden_pairs\\[0\\]"),
        ({"colour": "blue"}, "unknown policy keys"),
        ({"scheduler_names": "x"}, "scheduler_names"),
        ({"sharing": {"label": "", "pressures": {}}}, "sharing.label: must be the node label"),
        ({"sharing": {"label": HOST, "pressures": {"gpu": 1}}}, "sharing.pressures.gpu: unknown resource 'gpu'"),
        ({"sharing": {"label": HOST, "pressures": {"llc": 2}}}, "sharing.pressures.llc: must be a number from 0"),
    ]:
        with pytest.raises(ExtenderConfigError, match=problem):
            policy_from_mapping(bad)

"""The plugin scheduler inside real scheduling decisions on kwok.

gpu-scheduler of the tools folder (scripts/build-tools.sh gpu-scheduler) runs as the
second scheduler `gpu-scheduler` against a kwok cluster, with the
configuration the scheduler_plugins role renders; pods name it in
schedulerName and are checked through the API once bound. Each test has its
own nodes (a group label) and namespace, and its pods a nodeSelector on that
group, so the tests share one cluster and one scheduler without seeing each
other.

Every placement assertion here is one the plugin makes true: with the plugin
switched off (GPU_SCHEDULER_DISABLE=GPUScheduler,SpotScheduler,AZScheduler,
InterferenceAware renders the profile with those scores, and GPUScheduler's
filter, off) the same assertions fail, except that GPU pods still stay on GPU
nodes because NodeResourcesFit also refuses nodes without nvidia.com/gpu.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    CPU_DEMAND_ANNOTATION,
    PROFILE_ANNOTATION,
    TYPE_LABEL,
)

from tests.support import kwok
from tests.support import scheduler_plugins as plugins

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        bool(kwok.missing_tools()) or not plugins.GPU_SCHEDULER.is_file(),
        reason="run `make tools` first (the control plane and scripts/build-tools.sh gpu-scheduler)",
    ),
]

SCHEDULER = "gpu-scheduler"
DISABLED = [name for name in os.environ.get("GPU_SCHEDULER_DISABLE", "").split(",") if name]
ZONES = {"zone-a1": "a", "zone-a2": "a", "zone-a3": "a", "zone-a4": "a", "zone-b1": "b", "zone-c1": "c"}
BURST_NODES = [f"burst-{i:02d}" for i in range(20)]
# What nodes share: two hosts of two nodes. Only nodes with HOST belong to a host, so the other tests' nodes
# score as before.
HOST = "topology.example.com/host"
HOSTS = {"host1-a": "h1", "host1-b": "h1", "host2-a": "h2", "host2-b": "h2"}
SHARING = {"label": HOST, "pressures": {"memory_bandwidth": 0.5}}
# CPU time-sharing: two nodes of one CPU each.
ONE_CPU_NODES = ("ts-a", "ts-b")


def create_all_nodes(api: Any) -> None:
    """Every test's nodes, before the scheduler starts: it lists them before its first decision,
    where nodes created later could still be missing from its cache for the first pods."""
    plugins.create_nodes(api, [
        plugins.node_body("gpu-cpu-1", "gpu"),
        plugins.node_body("gpu-cpu-2", "gpu"),
        plugins.node_body("gpu-a100-40", "gpu", gpus=4, labels={"gpu.nvidia.com/memory": "40960"}),
        plugins.node_body("gpu-a100-80", "gpu", gpus=4, labels={"gpu.nvidia.com/memory": "81920"}),
    ])
    plugins.create_nodes(api, [
        plugins.node_body("spot-eks", "spot", labels={"eks.amazonaws.com/capacityType": "SPOT"}),
        plugins.node_body("spot-karpenter", "spot", labels={"karpenter.sh/capacity-type": "spot"}),
        plugins.node_body("od-eks", "spot", labels={"eks.amazonaws.com/capacityType": "ON_DEMAND"}),
        plugins.node_body("od-karpenter", "spot", labels={"karpenter.sh/capacity-type": "on-demand"}),
    ])
    plugins.create_nodes(api, [
        plugins.node_body(name, "zone", labels={"topology.kubernetes.io/zone": zone}) for name, zone in ZONES.items()
    ])
    plugins.create_nodes(api, [plugins.node_body(name, "burst") for name in BURST_NODES])
    plugins.create_nodes(api, [plugins.node_body(name, "sharing", labels={HOST: host}) for name, host in HOSTS.items()])
    plugins.create_nodes(api, [plugins.node_body(name, "timesharing", cpu="1") for name in ONE_CPU_NODES])


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, api: Any, workdir: Path) -> None:
        self.cluster = cluster
        self.api = api
        self.workdir = workdir

    def apps(self) -> Any:
        from kubernetes import client, config

        return client.AppsV1Api(config.new_client_from_config(config_file=str(self.cluster.kubeconfig)))

    def create_pods(self, namespace: str, bodies: list[dict[str, Any]]) -> dict[str, str]:
        plugins.create_namespace(self.api, namespace)
        for body in bodies:
            self.api.create_namespaced_pod(namespace, body)
        return plugins.wait_all_bound(self.api, namespace, len(bodies))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("plugins-kwok")
    cluster = kwok.KwokCluster(name=f"plugins-it-{kwok.free_port()}", workdir=workdir)
    cluster.create()
    try:
        create_all_nodes(cluster.api())
        config = plugins.render_config(workdir / "gpu-scheduler", cluster.kubeconfig,
                                       {**plugins.disabled_plugin_vars(DISABLED), "apps_sharing": SHARING})
        plugins.SchedulerProcess(cluster, config, workdir / "gpu-scheduler.log")
        yield Setup(cluster, cluster.api(), workdir)
    finally:
        cluster.delete()


def test_gpu_pods_get_gpu_nodes_with_the_most_memory_and_others_stay_off(setup: Setup) -> None:
    group = "gpu"
    trainers = [
        plugins.pod_body(f"trainer-{i}", group, SCHEDULER, requests={"cpu": "100m", "nvidia.com/gpu": "1"})
        for i in range(3)
    ]
    # More pods without GPUs than the CPU nodes' share: spreading alone would use the GPU nodes too.
    webs = [plugins.pod_body(f"web-{i}", group, SCHEDULER, requests={"cpu": "100m"}) for i in range(12)]
    placed = setup.create_pods("gpu", trainers + webs)
    on_trainers = {placed[f"trainer-{i}"] for i in range(3)}
    on_webs = {placed[f"web-{i}"] for i in range(12)}
    # Only GPU nodes for GPU pods (also NodeResourcesFit's doing), and the most GPU memory.
    assert on_trainers == {"gpu-a100-80"}, placed
    # Pods without a GPU leave the GPU nodes free while other nodes fit.
    assert on_webs <= {"gpu-cpu-1", "gpu-cpu-2"}, placed


def test_spot_preference_and_the_opt_out_annotation(setup: Setup) -> None:
    group = "spot"
    flexible = [plugins.pod_body(f"batch-{i}", group, SCHEDULER, requests={"cpu": "100m"}) for i in range(6)]
    steady = [
        plugins.pod_body(f"db-{i}", group, SCHEDULER, requests={"cpu": "100m"},
                         annotations={"interference.orchestrator/spot": "false"})
        for i in range(2)
    ]
    placed = setup.create_pods("spot", flexible + steady)
    assert {placed[f"batch-{i}"] for i in range(6)} <= {"spot-eks", "spot-karpenter"}, placed
    assert {placed[f"db-{i}"] for i in range(2)} <= {"od-eks", "od-karpenter"}, placed


def test_an_owners_pods_spread_over_zones(setup: Setup) -> None:
    # Zone a has four nodes, b and c one each: spreading over nodes alone (the
    # default scoring) would put most replicas in a.
    group = "zone"
    zones = ZONES
    plugins.create_namespace(setup.api, "zone")
    template = plugins.pod_body("unused", group, SCHEDULER, labels={"app": "web"}, requests={"cpu": "100m"})
    for pod_only in ("apiVersion", "kind"):
        del template[pod_only]
    del template["metadata"]["name"]
    setup.apps().create_namespaced_replica_set("zone", {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    })
    placed = plugins.wait_all_bound(setup.api, "zone", 6)
    per_zone = Counter(zones[node] for node in placed.values())
    assert per_zone == {"a": 2, "b": 2, "c": 2}, placed


def test_a_burst_of_cpu_and_memory_pods_pairs_them_up(setup: Setup) -> None:
    # 20 equal nodes, 20 cpu-heavy and 20 memory-heavy pods created back to
    # back in a random order: the scheduler decides while earlier pods are
    # only assumed, and InterferenceAware sees them in its NodeInfo.
    group = "burst"
    nodes = BURST_NODES
    bodies = plugins.burst_pods(group, SCHEDULER, int(os.environ.get("BURST_SEED", "11")))
    placed = setup.create_pods("burst", bodies)
    per_node = plugins.types_per_node(placed, nodes)
    assert plugins.same_type_pairs(per_node) == 0, json.dumps({n: dict(c) for n, c in per_node.items()})
    assert all(counts == {"cpu": 1, "memory": 1} for counts in per_node.values())


def test_with_sharing_a_memory_pod_keeps_off_the_host_whose_other_node_runs_memory_pods(setup: Setup) -> None:
    # Bound directly: two memory pods on host1-a, two cpu pods on each node of host2. Without the sharing
    # (the apps role's apps_sharing, which the role writes into InterferenceAware's args), host1-b, host2-a
    # and host2-b all add no interference on their own node, and the default scores pick host1-b, the
    # emptiest. With it, host1-b shares host1-a's memory bus at 0.5: the pod goes to host2.
    group = "sharing"
    plugins.create_namespace(setup.api, group)
    ballast = [("mem-0", "memory", "host1-a"), ("mem-1", "memory", "host1-a"),
               *((f"cpu-{node}-{i}", "cpu", node) for node in ("host2-a", "host2-b") for i in range(2))]
    for name, kind, node in ballast:
        body = plugins.pod_body(name, group, SCHEDULER, labels={TYPE_LABEL: kind}, requests={"cpu": "100m"})
        body["spec"]["nodeName"] = node
        setup.api.create_namespaced_pod(group, body)
    plugins.wait_all_bound(setup.api, group, len(ballast))
    setup.api.create_namespaced_pod(group, plugins.pod_body(
        "stream", group, SCHEDULER, labels={TYPE_LABEL: "memory"}, requests={"cpu": "100m"}))
    placed = plugins.wait_all_bound(setup.api, group, len(ballast) + 1)
    assert placed["stream"] in {"host2-a", "host2-b"}, placed


def test_a_pod_that_declares_a_core_keeps_off_the_one_cpu_node_whose_app_wants_its_core(setup: Setup) -> None:
    # ts-a and ts-b have one CPU each. Bound directly: a memory app on ts-a, half a cpu pressure without a
    # demand on ts-b. A new cpu pod goes to ts-a when nothing declares a demand (the dot product alone: 0
    # against 0.5), and to ts-b when it and the app on ts-a declare a core each: on ts-a they would take
    # turns (time-shared score +2 though the profiles do not overlap), on ts-b it fits (+1).
    group = "timesharing"
    plugins.create_namespace(setup.api, group)

    def placed(demand: dict[str, str]) -> str:
        ballast = [("mem", '{"memory_bandwidth":1.0}', "ts-a", demand), ("half", '{"cpu":0.5}', "ts-b", {})]
        for name, profile, node, declared in ballast:
            body = plugins.pod_body(name, group, SCHEDULER, labels={TYPE_LABEL: "custom"},
                                    annotations={PROFILE_ANNOTATION: profile, **declared}, requests={"cpu": "100m"})
            body["spec"]["nodeName"] = node
            setup.api.create_namespaced_pod(group, body)
        plugins.wait_all_bound(setup.api, group, len(ballast))
        setup.api.create_namespaced_pod(group, plugins.pod_body(
            "new", group, SCHEDULER, labels={TYPE_LABEL: "custom"},
            annotations={PROFILE_ANNOTATION: '{"cpu":1.0}', **demand}, requests={"cpu": "100m"}))
        where = plugins.wait_all_bound(setup.api, group, len(ballast) + 1)
        for name in where:
            kwok.delete_pod(setup.api, name, group)
        return where["new"]

    assert placed({}) == "ts-a"
    assert placed({CPU_DEMAND_ANNOTATION: "1000m"}) == "ts-b"


@pytest.mark.parametrize(
    ("plugin", "args", "named"),
    [
        ("SpotScheduler", {"preference": "sometimes"}, "args.preference"),
        ("InterferenceAware", {"resolution": 0}, "args.resolution"),
        ("InterferenceAware", {"sharing": {"label": HOST, "pressures": {"gpu": 1}}}, "args.sharing.pressures"),
        ("AZScheduler", {"topologyKey": ""}, "args.topologyKey"),
        ("GPUScheduler", {"memoryLabl": "x"}, "memoryLabl"),
    ],
)
def test_bad_args_stop_the_scheduler_naming_the_arg(
    setup: Setup, plugin: str, args: dict[str, Any], named: str
) -> None:
    config = yaml.safe_load((setup.workdir / "gpu-scheduler" / "kube-scheduler-config.yaml").read_text())
    for entry in config["profiles"][0]["pluginConfig"]:
        if entry["name"] == plugin:
            entry["args"] = args
    path = setup.workdir / f"bad-{plugin}.yaml"
    path.write_text(yaml.safe_dump(config))
    result = plugins.run_until_exit(path, setup.cluster.env)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert plugin in output and named in output, output[-2000:]

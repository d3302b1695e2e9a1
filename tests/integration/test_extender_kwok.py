"""The extender inside real scheduling decisions: kwokctl's kube-scheduler calls it.

A kwok cluster is created with the KubeSchedulerConfiguration the role renders
(profiles default-scheduler and interference-scheduler, the extender entry with
nodeCacheCapable and ignorable), the extender runs from scripts/extender and
watches the cluster, and pods with schedulerName interference-scheduler are
scheduled by the real kube-scheduler. Everything is checked through the API.

Nodes: w1, w2, w3 (no GPU) and gpu (nvidia.com/gpu: 4). Before the extender's
pods, "ballast" pods are bound directly (spec.nodeName): one cpu pod on w1 and
four memory pods on each other node. The default scoring alone puts the next
cpu pod on w1, the least loaded node, next to the other cpu pod: each test
shows that first with a pod of the default scheduler, so the assertion on the
extender's pods fails when the extender is switched off.

GPU capacity is not tested here: kube-scheduler's own resource fit already
keeps GPU pods off nodes without GPUs, so no kwok outcome could show the
extender's GPU filter (tests/unit/extender/test_decisions.py covers it).
Profile-only apps: tests/integration/test_extender_profiles_kwok.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kwok
from tests.support.k8s_objects import make_node, make_pod

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

WORKERS = ("w1", "w2", "w3")
GPU_NODE = "gpu"


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, api: Any, listen: str, policy: Path, workdir: Path) -> None:
        self.cluster = cluster
        self.api = api
        self.listen = listen
        self.policy = policy
        self.workdir = workdir
        self.extender: Any = None
        self.expected_pods = 0

    def start_extender(self) -> None:
        log = self.workdir / "extender.log"
        self.extender = kwok.start_extender(self.cluster.kubeconfig, self.listen, self.policy, log)

    def bind_directly(self, pod: Any) -> None:
        kwok.create_pod(self.api, pod)
        self.expected_pods += 1
        self.wait_view()

    def schedule(self, pod: Any) -> str:
        """Create a pod for interference-scheduler; wait until it is bound and the extender has seen that."""
        kwok.create_pod(self.api, pod)
        node = kwok.wait_bound(self.api, pod.metadata.name)
        self.expected_pods += 1
        self.wait_view()
        return node

    def wait_view(self) -> None:
        # The next decision must see this binding: wait for the watch to deliver it.
        kwok.wait_for(
            f"the extender to see {self.expected_pods} pods",
            lambda: kwok.metric(self.listen, "interference_extender_view_pods") == self.expected_pods,
        )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("extender-kwok")
    listen = f"127.0.0.1:{kwok.free_port()}"
    config, policy = kwok.render_scheduler_config(workdir, listen)
    cluster = kwok.KwokCluster(name=f"ext-it-{kwok.free_port()}", workdir=workdir, scheduler_config=config)
    cluster.create()
    try:
        api = cluster.api()
        kwok.create_nodes(api, [make_node(name) for name in WORKERS] + [make_node(GPU_NODE, gpus=4)])
        state = Setup(cluster, api, listen, policy, workdir)
        state.start_extender()
        yield state
    finally:
        if "state" in locals() and state.extender is not None:
            kwok.stop(state.extender)
        cluster.delete()


def test_kwokctl_scheduler_runs_the_roles_configuration(setup: Setup) -> None:
    import yaml

    used = yaml.safe_load((setup.cluster.workdir / "clusters" / setup.cluster.name / "scheduler.yaml").read_text())
    assert [p["schedulerName"] for p in used["profiles"]] == ["default-scheduler", "interference-scheduler"]
    (extender,) = used["extenders"]
    assert extender["urlPrefix"] == f"http://{setup.listen}"
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is True


def test_cpu_pods_avoid_the_node_with_a_cpu_neighbour_and_spread(setup: Setup) -> None:
    setup.bind_directly(make_pod("ballast-cpu", pod_type="cpu", node_name="w1"))
    for node in ("w2", "w3", GPU_NODE):
        for i in range(4):
            setup.bind_directly(make_pod(f"ballast-mem-{node}-{i}", pod_type="memory", node_name=node))

    # Without the extender: the default scheduler puts a cpu pod next to the cpu ballast.
    # The extender is called for it too (extenders serve every profile) and must let it pass.
    control = setup.schedule(make_pod("control-cpu", pod_type="cpu", scheduler_name="default-scheduler"))
    assert control == "w1"
    kwok.delete_pod(setup.api, "control-cpu")
    setup.expected_pods -= 1
    setup.wait_view()

    filters_before = kwok.metric(setup.listen, 'interference_extender_requests_total{code="200",verb="filter"}') or 0
    placed = [setup.schedule(make_pod(f"cpu-{i}", pod_type="cpu")) for i in range(3)]

    # w1 already runs a cpu pod; the other three nodes run none: one new cpu pod each.
    assert sorted(placed) == sorted(["w2", "w3", GPU_NODE])
    filters_after = kwok.metric(setup.listen, 'interference_extender_requests_total{code="200",verb="filter"}') or 0
    assert filters_after - filters_before == 3


def test_ignorable_extender_stopped_scheduling_goes_on(setup: Setup) -> None:
    kwok.stop(setup.extender)
    created = False
    try:
        assert kwok.http_status(setup.listen, "/healthz") is None
        kwok.create_pod(setup.api, make_pod("without-extender", pod_type="cpu"))
        created = True
        assert kwok.wait_bound(setup.api, "without-extender") in (*WORKERS, GPU_NODE)
    finally:
        # The module's other tests need the extender and its view as they left it,
        # whatever order pytest-randomly runs them in.
        if created:
            kwok.delete_pod(setup.api, "without-extender")
        setup.start_extender()
        setup.wait_view()

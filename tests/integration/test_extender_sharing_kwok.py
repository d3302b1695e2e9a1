"""What nodes share, in real scheduling decisions: the extender scores a host's other nodes too.

kwokctl's real kube-scheduler calls the extender (the role's configuration).
Nodes h1-a, h1-b (host h1) and h2-a, h2-b (host h2), one host per value of
HOST. Ballast pods bound directly: two memory pods on h1-a, two cpu pods on
each node of h2. A new memory pod then:

- goes to h1-b with the default scheduler alone (the least loaded node);
- goes to h1-b with the extender and no `sharing`: h1-b, h2-a and h2-b all
  add no interference on their own node, and kube-scheduler's own scores
  decide;
- goes to h2 with the extender given the apps role's `apps_sharing` (memory
  bandwidth shared at 0.5 within a host, through the role's policy file):
  h1-b shares h1-a's memory bus and adds 1, h2's nodes add 0. The engine
  (plan_apps with the same sharing, the ballast pinned) places it on h2 too.

So the last assertion fails when the extender ignores `sharing`, when the
role does not pass it on, or when the extender is off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import nodes_from_k8s

from tests.support import kwok
from tests.support.k8s_objects import make_node, make_pod, serialise

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

HOST = "topology.example.com/host"
NODES = {"h1-a": "h1", "h1-b": "h1", "h2-a": "h2", "h2-b": "h2"}
SHARING = {"label": HOST, "pressures": {"memory_bandwidth": 0.5}}
BALLAST = [
    ("ballast-mem-0", "memory", "h1-a"),
    ("ballast-mem-1", "memory", "h1-a"),
    *((f"ballast-cpu-{node}-{i}", "cpu", node) for node in ("h2-a", "h2-b") for i in range(2)),
]


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, api: Any, listen: str, workdir: Path) -> None:
        self.cluster = cluster
        self.api = api
        self.listen = listen
        self.workdir = workdir
        self.pods = 0

    def wait_view(self) -> None:
        kwok.wait_for(
            f"the extender to see {self.pods} pods",
            lambda: kwok.metric(self.listen, "interference_extender_view_pods") == self.pods,
        )

    def place(self, name: str, scheduler: str = "interference-scheduler") -> str:
        """Where a new memory pod goes; the pod is deleted again, so each test starts from the ballast."""
        kwok.create_pod(self.api, make_pod(name, pod_type="memory", scheduler_name=scheduler))
        try:
            return kwok.wait_bound(self.api, name)
        finally:
            kwok.delete_pod(self.api, name)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("extender-sharing")
    nodes = [make_node(name, labels={HOST: host}) for name, host in NODES.items()]
    with kwok.extender_cluster(workdir, "ext-share", nodes) as (cluster, api, listen):
        for name, pod_type, node in BALLAST:
            kwok.create_pod(api, make_pod(name, pod_type=pod_type, node_name=node))
            kwok.wait_bound(api, name)
        yield Setup(cluster, api, listen, workdir)


def placed_with_extender(setup: Setup, policy_vars: dict[str, Any], name: str) -> str:
    """Start the extender with the policy the role renders from `policy_vars`, place one memory pod, stop it."""
    _, policy = kwok.render_scheduler_config(setup.workdir / name, setup.listen, policy_vars)
    extender = kwok.start_extender(setup.cluster.kubeconfig, setup.listen, policy, setup.workdir / f"{name}.log")
    try:
        setup.pods = len(BALLAST)
        setup.wait_view()
        return setup.place(name)
    finally:
        kwok.stop(extender)


def test_without_sharing_the_extender_cannot_tell_the_hosts_apart(setup: Setup) -> None:
    assert setup.place("control", scheduler="default-scheduler") == "h1-b"
    assert placed_with_extender(setup, {}, "alone") == "h1-b"


def test_with_the_apps_sharing_the_extender_keeps_the_memory_pod_off_the_shared_host(setup: Setup) -> None:
    nodes = nodes_from_k8s([serialise(setup.api.read_node(name)) for name in NODES])
    apps = [{"name": name, "image": "x", "type": pod_type, "node": node} for name, pod_type, node in BALLAST]
    engine = plan_apps([*apps, {"name": "stream", "image": "x", "type": "memory"}], nodes, sharing=SHARING)
    assert engine["apps"][-1]["nodes"][0].startswith("h2-")
    assert placed_with_extender(setup, {"apps_sharing": SHARING}, "shared").startswith("h2-")

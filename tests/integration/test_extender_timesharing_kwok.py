"""CPU time-sharing, in real scheduling decisions: the extender counts a node's CPUs when pods declare a demand.

kwokctl's real kube-scheduler calls the extender (the role's configuration).
Nodes `a` and `b`, one CPU each. Ballast pods bound directly: on `a` a memory
app that declares a demand of one core (the apps role's
`interference.orchestrator/cpu-demand` annotation, written from `cpu_demand`),
on `b` half a cpu pressure with no demand. A new cpu pod then:

- goes to `a` when nothing declares a demand (the ballast on `a` without its
  annotation, the new pod without one): the same-node dot product alone
  prefers `a` (0 against 0.5);
- goes to `b` when both declare a demand of one core: on `a` the two would
  take turns on one CPU (time-shared score +2, though the profiles do not
  overlap), on `b` it fits and only the pressures meet (+1). The engine
  (plan_apps with the ballast pinned, on the same Node objects) places it on
  `b` too.

So the last assertion fails when the extender ignores the demand annotation
or the node's CPUs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    CPU_DEMAND_ANNOTATION,
    PROFILE_ANNOTATION,
)

from tests.support import kwok
from tests.support.k8s_objects import make_node, make_pod, serialise

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

NODES = ("a", "b")
# name, profile, node, demand
BALLAST = [("ballast-mem", {"memory_bandwidth": 1.0}, "a", "1000m"), ("ballast-half", {"cpu": 0.5}, "b", None)]


def pod(name: str, profile: dict[str, float], node: str | None = None, demand: str | None = None) -> Any:
    annotations = {PROFILE_ANNOTATION: json.dumps(profile), **({CPU_DEMAND_ANNOTATION: demand} if demand else {})}
    return make_pod(name, pod_type="custom", node_name=node, annotations=annotations)


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, api: Any, listen: str, workdir: Path) -> None:
        self.cluster = cluster
        self.api = api
        self.listen = listen
        self.workdir = workdir

    def ballast(self, with_demand: bool) -> None:
        """The ballast pods, the one on `a` with or without its demand (replaced when it differs)."""
        present = {item.metadata.name for item in self.api.list_namespaced_pod("default").items}
        for name, profile, node, demand in BALLAST:
            if name in present:
                kwok.delete_pod(self.api, name)
            kwok.create_pod(self.api, pod(name, profile, node, demand if with_demand else None))
            kwok.wait_bound(self.api, name)

    def placed_with_extender(self, name: str, demand: str | None) -> str:
        """Start the extender, place one cpu pod (with or without a demand), delete it and stop the extender."""
        _, policy = kwok.render_scheduler_config(self.workdir / name, self.listen, {})
        extender = kwok.start_extender(self.cluster.kubeconfig, self.listen, policy, self.workdir / f"{name}.log")
        try:
            kwok.wait_for(
                "the extender to see the ballast",
                lambda: kwok.metric(self.listen, "interference_extender_view_pods") == len(BALLAST),
            )
            kwok.create_pod(self.api, pod(name, {"cpu": 1.0}, demand=demand))
            try:
                return kwok.wait_bound(self.api, name)
            finally:
                kwok.delete_pod(self.api, name)
        finally:
            kwok.stop(extender)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("extender-timesharing")
    nodes = [make_node(name, cpu="1") for name in NODES]
    with kwok.extender_cluster(workdir, "ext-ts", nodes) as (cluster, api, listen):
        yield Setup(cluster, api, listen, workdir)


def test_without_a_demand_the_extender_prefers_the_node_whose_pressures_do_not_meet(setup: Setup) -> None:
    setup.ballast(with_demand=False)
    assert setup.placed_with_extender("plain", demand=None) == "a"


def test_a_pod_that_declares_a_core_keeps_off_the_one_cpu_node_whose_app_wants_its_core(setup: Setup) -> None:
    setup.ballast(with_demand=True)
    nodes = nodes_from_k8s([serialise(setup.api.read_node(name)) for name in NODES])
    apps = [
        {"name": name, "image": "x", "profile": profile, "node": node, **({"cpu_demand": demand} if demand else {})}
        for name, profile, node, demand in BALLAST
    ]
    engine = plan_apps([*apps, {"name": "newcomer", "image": "x", "profile": {"cpu": 1.0}, "cpu_demand": 1}], nodes)
    assert engine["apps"][-1]["nodes"] == ["b"]
    assert engine["apps"][-1]["cpu_demand_annotation"] == "1000m"
    assert setup.placed_with_extender("demanding", demand="1000m") == "b"

"""A profile-only app and a typed app, placed by the extender exactly as the engine places them.

kwokctl's real kube-scheduler calls the extender (the role's configuration),
which watches the cluster. The pods carry what the apps role writes on every
pod it manages, taken from the same `plan_apps` result the Deployment template
reads: the type label (`custom` for the profile-only app) and the profile
annotation.

Nodes n1, n2, n3 (equal). Ballast pods bound directly: on n1 one profile-only
pod pressing on cpu and llc; on n2 three memory pods; on n3 five. The default
scheduler alone puts every new pod on n1, the least loaded node; that is shown
with a default-scheduler pod before each extender pod, so each assertion on an
extender pod fails when the extender is switched off (or cannot read the
profile of a profile-only pod, as before the profile annotation).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import PROFILE_ANNOTATION

from tests.support import kwok
from tests.support.k8s_objects import make_node, make_pod, serialise

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

NODES = ("n1", "n2", "n3")
REQUESTS = {"cpu": "100m", "memory": "64Mi"}  # what make_pod requests
BALLAST: list[dict[str, Any]] = [
    {"name": "ballast-mixed", "image": "x", "profile": {"cpu": 1, "llc": 1}, "node": "n1"},
    *({"name": f"ballast-mem-a{i}", "image": "x", "type": "memory", "node": "n2"} for i in range(3)),
    *({"name": f"ballast-mem-b{i}", "image": "x", "type": "memory", "node": "n3"} for i in range(5)),
]
CACHE = {"name": "cache", "image": "x", "profile": {"llc": 1}}  # profile-only: type label `custom`
CRUNCH = {"name": "crunch", "image": "x", "type": "cpu"}
APPS = [dict(app, resources={"requests": REQUESTS}) for app in [*BALLAST, CACHE, CRUNCH]]


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, api: Any, listen: str) -> None:
        self.cluster = cluster
        self.api = api
        self.listen = listen
        self.extender: Any = None
        self.pods = 0
        nodes = [serialise(api.read_node(name)) for name in NODES]
        # The engine's plan for every app at once, the ballast pinned where it is bound.
        self.plan = {entry["name"]: entry for entry in plan_apps(APPS, nodes_from_k8s(nodes))["apps"]}

    def pod(
        self, app: str, name: str | None = None, node: str | None = None, scheduler: str = "interference-scheduler"
    ) -> Any:
        """A pod of `app` labelled and annotated as the apps role does it."""
        entry = self.plan[app]
        return make_pod(
            name or app,
            app=app,
            pod_type=entry["type_label"],
            node_name=node,
            annotations={PROFILE_ANNOTATION: entry["profile_annotation"]},
            scheduler_name=scheduler,
        )

    def wait_view(self) -> None:
        kwok.wait_for(
            f"the extender to see {self.pods} pods",
            lambda: kwok.metric(self.listen, "interference_extender_view_pods") == self.pods,
        )

    def bind(self, pod: Any) -> str:
        kwok.create_pod(self.api, pod)
        node = kwok.wait_bound(self.api, pod.metadata.name)
        self.pods += 1
        self.wait_view()
        return node

    def default_scheduler_choice(self, app: str) -> str:
        """Where the default scheduler alone puts a pod of `app` (the pod is deleted again)."""
        node = self.bind(self.pod(app, name=f"control-{app}", scheduler="default-scheduler"))
        kwok.delete_pod(self.api, f"control-{app}")
        self.pods -= 1
        self.wait_view()
        return node


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("extender-profiles")
    listen = f"127.0.0.1:{kwok.free_port()}"
    config, policy = kwok.render_scheduler_config(workdir, listen)
    cluster = kwok.KwokCluster(name=f"ext-prof-{kwok.free_port()}", workdir=workdir, scheduler_config=config)
    cluster.create()
    extender = None
    try:
        api = cluster.api()
        kwok.create_nodes(api, [make_node(name) for name in NODES])
        extender = kwok.start_extender(cluster.kubeconfig, listen, policy, workdir / "extender.log")
        state = Setup(cluster, api, listen)
        state.extender = extender
        for app in BALLAST:
            state.bind(state.pod(app["name"], node=app["node"]))
        yield state
    finally:
        if extender is not None:
            kwok.stop(extender)
        cluster.delete()


def test_the_engine_keeps_both_apps_off_the_mixed_node(setup: Setup) -> None:
    assert setup.plan["cache"]["type_label"] == "custom"
    assert setup.plan["cache"]["nodes"] == ["n2"]
    assert setup.plan["crunch"]["nodes"] == ["n2"]


def test_profile_only_pod_placed_by_its_profile_as_the_engine_places_it(setup: Setup) -> None:
    assert setup.default_scheduler_choice("cache") == "n1"
    assert [setup.bind(setup.pod("cache"))] == setup.plan["cache"]["nodes"]


def test_typed_pod_placed_as_the_engine_places_it_counting_the_profile_only_load(setup: Setup) -> None:
    assert setup.default_scheduler_choice("crunch") == "n1"
    assert [setup.bind(setup.pod("crunch"))] == setup.plan["crunch"]["nodes"]

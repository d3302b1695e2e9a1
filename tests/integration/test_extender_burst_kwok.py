"""A burst scheduled by the real kube-scheduler with the extender, on kwok: no pile-up.

The extender's watch lags kube-scheduler: in a burst, consecutive pods are
scored before the previous bindings come back through the watch, and pile up
on the same "best" nodes. With the role's default configuration the extender
binds the pods itself (`bindVerb`) and records each binding in its view at
once. Here 20 cpu-heavy and 20 memory-heavy pods, created in a random order
before the scheduler starts (so it meets them as one burst), go to 20 equal
nodes: each node ends with one pod of each type, zero interference.

EXTENDER_BIND=false renders the configuration without bindVerb (kube-scheduler
binds, the extender learns of bindings from its watch only): the same
assertion then fails, which shows the binding is what makes it true.
BURST_SEED picks another creation order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import kwok
from tests.support import scheduler_plugins as plugins

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

SCHEDULER = "interference-scheduler"  # the role's profile, the one the extender's policy decides for
BIND = os.environ.get("EXTENDER_BIND", "true").lower() not in ("0", "false", "no")
NODES = [f"burst-{i:02d}" for i in range(20)]
GROUP = "burst"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[kwok.KwokCluster, Any, str]]:
    workdir = tmp_path_factory.mktemp("extender-burst")
    listen = f"127.0.0.1:{kwok.free_port()}"
    _, policy = kwok.render_scheduler_config(workdir, listen, {"scheduler_extender_bind": BIND})
    created = kwok.KwokCluster(name=f"ext-burst-{kwok.free_port()}", workdir=workdir)
    created.create()
    extender = None
    try:
        api = created.api()
        plugins.create_nodes(api, [plugins.node_body(name, GROUP) for name in NODES])
        extender = kwok.start_extender(created.kubeconfig, listen, policy, workdir / "extender.log")
        kwok.wait_for("the extender to see the nodes",
                      lambda: kwok.metric(listen, "interference_extender_view_nodes") == len(NODES))
        yield created, api, listen
    finally:
        if extender is not None:
            kwok.stop(extender)
        created.delete()


def test_a_burst_of_cpu_and_memory_pods_pairs_them_up(cluster: tuple[kwok.KwokCluster, Any, str]) -> None:
    created, api, listen = cluster
    bodies = plugins.burst_pods(GROUP, SCHEDULER, int(os.environ.get("BURST_SEED", "11")))
    plugins.create_namespace(api, GROUP)
    for body in bodies:
        api.create_namespaced_pod(GROUP, body)
    # The scheduler starts once every pod is pending: it meets them as one burst.
    config = kwok.write_scheduler_config(
        created.workdir / "burst-scheduler.json", created.kubeconfig, SCHEDULER, f"http://{listen}"
    )
    log = created.workdir / "burst-scheduler.log"
    plugins.SchedulerProcess(created, config, log, binary=kwok.TOOLS / "kube-scheduler")
    placed = plugins.wait_all_bound(api, GROUP, len(bodies))

    per_node = plugins.types_per_node(placed, NODES)
    assert plugins.same_type_pairs(per_node) == 0, json.dumps({n: dict(c) for n, c in per_node.items()})
    assert all(counts == {"cpu": 1, "memory": 1} for counts in per_node.values())
    if BIND:
        # Every pod went through the extender's bind and was in its view before the watch brought it.
        recorded = kwok.metric(listen, 'interference_extender_bindings_total{result="recorded"}')
        assert recorded == len(bodies)

"""The apps role sees nodes and capacity as kube-scheduler does (kwok, real control plane, ansible-playbook).

Three labelled workers: one tainted dedicated=gpu:NoSchedule, one NotReady,
and one 90% full: a pod this collection does not manage requests 3600m of its
4 CPUs. The run must avoid the first two, fit the apps into what the third has
left, print why the tainted and the NotReady ones were left out, and rerun with
changed=0; an app too big for what is left is refused before anything is
applied; an app that tolerates the taint uses the tainted node.

The NotReady node is played by kwok's own chaos stage (node-not-ready, for nodes
labelled node-not-ready.stage.kwok.x-k8s.io=true), loaded with kwokctl's default
stages from tests/support/kwok-stages/not-ready-nodes.yaml; the node controller
then taints it node.kubernetes.io/not-ready, as it does a dead kubelet's node.

The tests run in order on one cluster (module scope).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kwok
from tests.support.playbook_json import PlaybookRun, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

NAMESPACE = "interference-apps"
MANAGED = "app.kubernetes.io/managed-by=interference.orchestrator"
TAINTED, BUSY, DOWN = "cv-tainted", "cv-busy", "cv-down"
STAGES = Path(kwok.__file__).parent / "kwok-stages" / "not-ready-nodes.yaml"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
APPS = [
    {"name": "cruncher", "image": "pts/c-ray", "type": "cpu", "resources": {"requests": {"cpu": "200m"}}},
    {"name": "streamer", "image": "pts/mbw", "type": "memory", "resources": {"requests": {"cpu": "150m"}}},
]
TOLERANT = {
    "name": "tolerant", "image": "pts/c-ray", "type": "cpu", "resources": {"requests": {"cpu": "100m"}},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
}


def node(name: str, group: str, *, taints: list[dict[str, str]] | None = None, ready: bool = True) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    metadata: dict[str, Any] = {
        "name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "group": group},
    }
    if not ready:
        metadata["labels"]["node-not-ready.stage.kwok.x-k8s.io"] = "true"
    metadata["annotations"] = {"kwok.x-k8s.io/node": "fake"}
    return {
        "apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": {"taints": taints or []},
        "status": {"allocatable": capacity, "capacity": capacity},
    }


class Cluster:
    def __init__(self, cluster: kwok.KwokCluster, tmp: Path) -> None:
        self.kwok = cluster
        self.tmp = tmp
        self.core: Any = cluster.api()

    def run(self, apps: list[dict[str, Any]]) -> PlaybookRun:
        plays = [{"hosts": "localhost", "gather_facts": False, "roles": [{"role": "interference.orchestrator.apps"}]}]
        variables = {
            "cluster_kubeconfig": str(self.kwok.kubeconfig),
            "cluster_context": f"kwok-{self.kwok.name}",
            "apps": apps,
            "apps_wait_timeout": 120,
        }
        return run_playbook(self.tmp, plays, variables)

    def nodes_of_apps(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = {}
        for pod in self.core.list_namespaced_pod(NAMESPACE, label_selector=MANAGED).items:
            if pod.metadata.deletion_timestamp is None:
                result.setdefault(pod.metadata.labels["app.kubernetes.io/name"], []).append(pod.spec.node_name)
        return result


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    workdir = tmp_path_factory.mktemp(f"cluster-view-{worker}")
    kwok_cluster = kwok.KwokCluster(name=f"engine-cv-{worker}-{kwok.free_port()}", workdir=workdir,
                                    create_args=("--config", str(STAGES)))
    kwok_cluster.create()
    try:
        state = Cluster(kwok_cluster, workdir)
        core = state.core
        core.create_node(node(TAINTED, "node1", taints=[TAINT]))
        core.create_node(node(BUSY, "node2"))
        core.create_node(node(DOWN, "node3", ready=False))
        kwok.wait_for("the played nodes to be Ready, and the chaos one NotReady", lambda: all(
            any(c.type == "Ready" and c.status == ("True" if n != DOWN else "False")
                for c in (core.read_node(n).status.conditions or []))
            for n in (TAINTED, BUSY, DOWN)
        ))
        # Another tenant's pod, bound directly: 3600m of the node's 4 CPUs.
        core.create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tenant"},
            "spec": {"nodeName": BUSY, "containers": [
                {"name": "tenant", "image": "tenant:1", "resources": {"requests": {"cpu": "3600m"}}},
            ]},
        })
        kwok.wait_for("the tenant pod to run", lambda: core.read_namespaced_pod("tenant", "default").status.phase
                      == "Running")
        yield state
    finally:
        subprocess.run(
            [str(kwok.TOOLS / "kwokctl"), "delete", "cluster", "--name", kwok_cluster.name,
             "--kubeconfig", str(workdir / "discarded-kubeconfig.yaml")],
            check=False, env=kwok_cluster.env, capture_output=True,
        )


def table(run: PlaybookRun) -> str:
    return "\n".join(str(message) for message in run.messages())


def test_the_run_avoids_the_tainted_node_and_fits_what_other_pods_leave(cluster: Cluster) -> None:
    run = cluster.run(APPS)
    assert run.returncode == 0, run.failures()
    assert cluster.nodes_of_apps() == {"cruncher": [BUSY], "streamer": [BUSY]}
    printed = table(run)
    assert f"LEFT OUT: {TAINTED}: tainted dedicated=gpu:NoSchedule, which no app tolerates" in printed
    assert f"LEFT OUT: {DOWN}: NotReady" in printed


def test_the_rerun_changes_nothing(cluster: Cluster) -> None:
    again = cluster.run(APPS)
    assert again.returncode == 0, again.failures()
    assert again.stats["changed"] == 0
    assert cluster.nodes_of_apps() == {"cruncher": [BUSY], "streamer": [BUSY]}


def test_an_app_bigger_than_what_is_left_is_refused_before_anything_is_applied(cluster: Cluster) -> None:
    big = {"name": "big", "image": "pts/c-ray", "type": "cpu", "resources": {"requests": {"cpu": "500m"}}}
    run = cluster.run([*APPS, big])
    assert run.returncode != 0
    output = run.failures()
    assert "0/3 nodes fit big" in output, output
    assert "insufficient cpu" in output and "untolerated taint" in output and "1 not ready" in output
    assert "Traceback" not in output
    assert "big" not in cluster.nodes_of_apps()


def test_an_app_that_tolerates_the_taint_uses_the_tainted_node(cluster: Cluster) -> None:
    run = cluster.run([*APPS, TOLERANT])
    assert run.returncode == 0, run.failures()
    placed = cluster.nodes_of_apps()
    assert placed["tolerant"] == [TAINTED]
    assert placed["cruncher"] == placed["streamer"] == [BUSY]
    [pod] = [p for p in cluster.core.list_namespaced_pod(NAMESPACE, label_selector=MANAGED).items
             if p.metadata.labels["app.kubernetes.io/name"] == "tolerant"]
    assert any(t.key == "dedicated" and t.value == "gpu" for t in pod.spec.tolerations or [])

"""Verify the kwok scenario against the real control plane.

Everything here is read back from the API server the scenario created (the
kubernetes Python client, no mocks) or from the machine (testinfra's `host`):
the nodes site.yml labelled, and the app pods kube-scheduler bound, which must
sit exactly where the placement annotated them and interfere no more than the
engine's lower bound allows.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    dot,
    interference_lower_bound,
    profile_for_type,
)
from kubernetes import client, config

from tests.support.tools import tools_bin

MANAGED = "app.kubernetes.io/managed-by=interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
TYPE_LABEL = "interference.orchestrator/type"
# Where `make tools` puts the binaries (INTERFERENCE_TOOLS_BIN, else the per-user cache).
TOOLS_BIN = str(tools_bin())


@pytest.fixture(scope="module")
def scenario(host: Any) -> dict[str, Any]:
    """The scenario's inventory variables (cluster name, workers, label key)."""
    variables = host.ansible.get_variables()
    workdir = Path(os.environ.get("KWOK_WORKDIR", "~/.kwok")).expanduser()
    name = variables["cluster_name"]
    return {
        "name": name,
        "workers": int(variables["cluster_workers"]),
        "label_key": variables.get("node_labels_key", "group"),
        "label_prefix": variables.get("node_labels_prefix", "node"),
        "namespace": variables.get("apps_namespace", "interference-apps"),
        "kubeconfig": workdir / "clusters" / name / "kubeconfig.yaml",
        "context": f"kwok-{name}",
    }


@pytest.fixture(scope="module")
def core(scenario: dict[str, Any]) -> Any:
    api = config.new_client_from_config(config_file=str(scenario["kubeconfig"]), context=scenario["context"])
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def apps_api(scenario: dict[str, Any]) -> Any:
    api = config.new_client_from_config(config_file=str(scenario["kubeconfig"]), context=scenario["context"])
    return client.AppsV1Api(api)


def worker_names(scenario: dict[str, Any]) -> list[str]:
    name = scenario["name"]
    return [f"{name}-worker"] + [f"{name}-worker{i}" for i in range(2, scenario["workers"] + 1)]


def live_app_pods(core: Any, namespace: str) -> list[Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=MANAGED).items
    return [pod for pod in pods if pod.metadata.deletion_timestamp is None]


def test_control_plane_runs_from_local_binaries(host: Any, scenario: dict[str, Any]) -> None:
    """etcd, the API server, scheduler, controller manager and kwok run from the binaries `make tools` built."""
    assert host.file(str(scenario["kubeconfig"])).is_file
    bin_dir = scenario["kubeconfig"].parent / "bin"
    commands = [p.args.split()[0] for p in host.process.filter() if p.args]
    for name in ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok-controller"):
        assert str(bin_dir / name) in commands, f"{name} of cluster {scenario['name']} is not running"
        # build-tools.sh may itself link a binary it found on PATH, so compare where both links end.
        built = host.file(f"{TOOLS_BIN}/{'kwok' if name == 'kwok-controller' else name}")
        assert built.exists, f"{name} was not built into {TOOLS_BIN}"
        assert host.file(str(bin_dir / name)).linked_to == (built.linked_to if built.is_symlink else built.path), (
            f"{name} is not a local build"
        )


def test_nodes_mirror_the_kind_topology(core: Any, scenario: dict[str, Any]) -> None:
    nodes = {node.metadata.name: node for node in core.list_node().items}
    expected = [f"{scenario['name']}-control-plane", *worker_names(scenario)]
    assert sorted(nodes) == sorted(expected)
    for name, node in nodes.items():
        assert node.metadata.annotations.get("kwok.x-k8s.io/node") == "fake"
        assert node.metadata.labels["kubernetes.io/hostname"] == name
        ready = [c.status for c in node.status.conditions or [] if c.type == "Ready"]
        assert ready == ["True"], f"{name} is not Ready"


def test_workers_carry_their_group_label(core: Any, scenario: dict[str, Any]) -> None:
    key, prefix = scenario["label_key"], scenario["label_prefix"]
    nodes = {node.metadata.name: node.metadata.labels for node in core.list_node().items}
    for index, name in enumerate(worker_names(scenario), start=1):
        assert nodes[name].get(key) == f"{prefix}{index}"
    assert key not in nodes[f"{scenario['name']}-control-plane"]


def test_every_app_pod_runs_on_its_planned_node(core: Any, apps_api: Any, scenario: dict[str, Any]) -> None:
    deployments = apps_api.list_namespaced_deployment(scenario["namespace"], label_selector=MANAGED).items
    assert deployments, "site.yml deployed no app"
    pods = live_app_pods(core, scenario["namespace"])
    for deployment in deployments:
        app = deployment.metadata.name
        planned = (deployment.metadata.annotations or {})[PLANNED].split(",")
        assert len(planned) == deployment.spec.replicas
        own = [pod for pod in pods if pod.metadata.labels["app.kubernetes.io/name"] == app]
        assert Counter(pod.spec.node_name for pod in own) == Counter(planned), app
        for pod in own:
            assert pod.status.phase == "Running", f"{pod.metadata.name} is {pod.status.phase}"
            scheduled = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
            assert [c.status for c in scheduled] == ["True"]
            assert pod.metadata.labels[TYPE_LABEL] == deployment.metadata.labels[TYPE_LABEL]


def test_same_type_apps_share_no_node_while_nodes_suffice(core: Any, scenario: dict[str, Any]) -> None:
    by_type: dict[str, list[str]] = defaultdict(list)
    for pod in live_app_pods(core, scenario["namespace"]):
        by_type[pod.metadata.labels[TYPE_LABEL]].append(pod.spec.node_name)
    assert by_type
    for app_type, nodes in by_type.items():
        if len(nodes) <= scenario["workers"]:
            assert len(set(nodes)) == len(nodes), f"two {app_type} apps share a node: {sorted(nodes)}"


def test_total_interference_is_at_the_lower_bound(core: Any, scenario: dict[str, Any]) -> None:
    """The pods' actual nodes score exactly the engine's lower bound (nothing binds capacity here)."""
    on_node: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    for pod in live_app_pods(core, scenario["namespace"]):
        on_node[pod.spec.node_name].append(profile_for_type(pod.metadata.labels[TYPE_LABEL]))
    total = sum(
        dot(profiles[i], profiles[j])
        for profiles in on_node.values()
        for i in range(len(profiles))
        for j in range(i + 1, len(profiles))
    )
    every = [profile for profiles in on_node.values() for profile in profiles]
    assert total == pytest.approx(interference_lower_bound(every, scenario["workers"]))

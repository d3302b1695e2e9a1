"""Verify the kind scenario: real nodes, real containers, real Grafana.

Read back from the cluster site.yml built (kubernetes Python client, the
kubeconfig kind wrote) and from the machine (Grafana on localhost): the
worker labels, the monitoring release, Grafana with our dashboard and the
pod labels Prometheus scrapes, the app pods on their planned nodes running
the content-hash images, and no two same-type apps sharing a node.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

MANAGED = "app.kubernetes.io/managed-by=interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
TYPE_LABEL = "interference.orchestrator/type"
MONITORING_NAMESPACE = "monitoring"
RELEASE = "kube-prometheus-stack"
GRAFANA = "http://localhost:3000"
PASSWORD_FILE = Path("~/.config/interference-orchestrator/grafana-admin-password").expanduser()

T = TypeVar("T")


def eventually(probe: Callable[[], T], attempts: int = 30, pause: float = 5.0) -> T:
    """Return probe()'s first result that raises no AssertionError/URLError (sidecars and scrapes lag)."""
    for attempt in range(attempts):
        try:
            return probe()
        except (AssertionError, urllib.error.URLError, ConnectionError):
            if attempt == attempts - 1:
                raise
            time.sleep(pause)
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def scenario(host: Any) -> dict[str, Any]:
    variables = host.ansible.get_variables()
    kubeconfig = os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)[0]
    return {
        "name": variables["cluster_name"],
        "workers": int(variables["cluster_workers"]),
        "apps": variables["apps"],
        "label_key": variables.get("node_labels_key", "group"),
        "label_prefix": variables.get("node_labels_prefix", "node"),
        "namespace": variables.get("apps_namespace", "interference-apps"),
        "kubeconfig": str(Path(kubeconfig).expanduser()),
        "context": f"kind-{variables['cluster_name']}",
    }


@pytest.fixture(scope="module")
def api(scenario: dict[str, Any]) -> client.ApiClient:
    return config.new_client_from_config(config_file=scenario["kubeconfig"], context=scenario["context"])


def grafana(path: str) -> Any:
    """GET a Grafana API path as the admin the monitoring role stored; return the JSON body."""
    credentials = base64.b64encode(f"admin:{PASSWORD_FILE.read_text().strip()}".encode()).decode()
    request = urllib.request.Request(GRAFANA + path, headers={"Authorization": f"Basic {credentials}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        return json.load(response)


def worker_names(scenario: dict[str, Any]) -> list[str]:
    name = scenario["name"]
    return [f"{name}-worker"] + [f"{name}-worker{i}" for i in range(2, scenario["workers"] + 1)]


def test_workers_are_labelled_in_name_order_and_the_control_plane_is_not(
    api: client.ApiClient, scenario: dict[str, Any]
) -> None:
    items: list[Any] = client.CoreV1Api(api).list_node().items
    nodes = {node.metadata.name: node.metadata.labels for node in items}
    workers = worker_names(scenario)
    assert sorted(nodes) == sorted([f"{scenario['name']}-control-plane", *workers])
    for index, worker in enumerate(sorted(workers), start=1):
        assert nodes[worker][scenario["label_key"]] == f"{scenario['label_prefix']}{index}"
    assert scenario["label_key"] not in nodes[f"{scenario['name']}-control-plane"]


def test_monitoring_release_is_deployed(api: client.ApiClient) -> None:
    # helm 3 keeps each release revision in a Secret labelled owner=helm,name=<release>,status=<status>.
    secrets = (
        client.CoreV1Api(api)
        .list_namespaced_secret(MONITORING_NAMESPACE, label_selector=f"owner=helm,name={RELEASE},status=deployed")
        .items
    )
    assert len(secrets) == 1


def test_grafana_answers_on_localhost_3000_with_the_stored_password_not_the_default() -> None:
    health = eventually(lambda: grafana("/api/health"))
    assert health["database"] == "ok"
    assert PASSWORD_FILE.stat().st_mode & 0o777 == 0o600
    assert PASSWORD_FILE.read_text().strip() != "prom-operator"


def test_grafana_loaded_the_interference_overview_dashboard() -> None:
    dashboard = eventually(lambda: grafana("/api/dashboards/uid/interference-overview"))["dashboard"]
    assert dashboard["title"] == "Interference overview"


def test_prometheus_sees_the_app_and_type_pod_labels(scenario: dict[str, Any]) -> None:
    query = urllib.parse.quote(
        f'kube_pod_labels{{namespace="{scenario["namespace"]}",label_interference_orchestrator_type!=""}}'
    )

    def labelled_apps() -> set[tuple[str, str]]:
        body = grafana(f"/api/datasources/proxy/uid/prometheus/api/v1/query?query={query}")
        found = {
            (r["metric"]["label_app_kubernetes_io_name"], r["metric"]["label_interference_orchestrator_type"])
            for r in body["data"]["result"]
        }
        assert found == {(app["name"], app["type"]) for app in scenario["apps"]}
        return found

    eventually(labelled_apps, attempts=36)


def app_pods(api: client.ApiClient, namespace: str) -> list[Any]:
    pods: list[Any] = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=MANAGED).items
    return [pod for pod in pods if pod.metadata.deletion_timestamp is None]


def test_every_app_pod_runs_on_its_planned_node(api: client.ApiClient, scenario: dict[str, Any]) -> None:
    deployments: list[Any] = (
        client.AppsV1Api(api).list_namespaced_deployment(scenario["namespace"], label_selector=MANAGED).items
    )
    assert sorted(d.metadata.name for d in deployments) == sorted(app["name"] for app in scenario["apps"])
    pods = app_pods(api, scenario["namespace"])
    for deployment in deployments:
        planned = deployment.metadata.annotations[PLANNED].split(",")
        mine = [p for p in pods if p.metadata.labels["app.kubernetes.io/name"] == deployment.metadata.name]
        assert sorted(p.spec.node_name for p in mine) == sorted(planned), deployment.metadata.name
        assert all(p.status.phase == "Running" for p in mine)


def test_no_two_apps_of_one_type_share_a_node(api: client.ApiClient, scenario: dict[str, Any]) -> None:
    by_node: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pod in app_pods(api, scenario["namespace"]):
        by_node[pod.spec.node_name].append(
            (pod.metadata.labels[TYPE_LABEL], pod.metadata.labels["app.kubernetes.io/name"])
        )
    for node, apps in by_node.items():
        types = [kind for kind, _ in apps]
        assert len(types) == len(set(types)), f"{node} runs same-type apps: {sorted(apps)}"


def test_app_containers_run_the_content_hash_images(api: client.ApiClient, scenario: dict[str, Any]) -> None:
    images = {app["name"]: app["image"] for app in scenario["apps"]}
    for pod in app_pods(api, scenario["namespace"]):
        app = pod.metadata.labels["app.kubernetes.io/name"]
        (container,) = pod.spec.containers
        assert re.fullmatch(re.escape(images[app]) + r":h-[0-9a-f]{12}", container.image), container.image


def test_the_test_is_installed_in_the_image(host: Any, api: client.ApiClient, scenario: dict[str, Any]) -> None:
    pod = next(
        p for p in app_pods(api, scenario["namespace"]) if p.metadata.labels["app.kubernetes.io/name"] == "c-ray"
    )
    installed = host.check_output(
        "kubectl --kubeconfig %s --context %s -n %s exec %s -- phoronix-test-suite list-installed-tests",
        scenario["kubeconfig"],
        scenario["context"],
        scenario["namespace"],
        pod.metadata.name,
    )
    assert "c-ray" in installed

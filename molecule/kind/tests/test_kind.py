"""Verify the kind scenario: real nodes, real containers, real workloads.

Read back from the cluster site.yml built (kubernetes Python client, the
kubeconfig kind wrote), from the Docker engine and from the machine: the
worker labels, Grafana's published port, the app pods Running in real
containers on their planned nodes with the content-hash images, the
workloads' own result lines from `run-benchmark`, and pod traffic across
nodes, directly and through a Service.

Monitoring, whichever stack the image source chose: the helm release is
deployed, Prometheus answers on its kind-mapped port within a bounded time,
every scrape target is up (each kubelet's cAdvisor, node-exporter, the
interference probe on each worker, named by node when not), and cAdvisor has
CPU series for every app pod. Offline (no registry: the node image, the
Debian workload images and the offline chart's images were built here) the
stack is the collection's chart, with a `helm test`; Grafana is not installed
there (AGPL, cannot be had offline), and the tests that need it say so as skips.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    dot,
    interference_lower_bound,
    profile_for_type,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.prometheus import (
    active_targets,
    query,
    target_problems,
    wait_ready,
)
from kubernetes import client, config
from kubernetes.stream import stream

MANAGED = "app.kubernetes.io/managed-by=interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
TYPE_LABEL = "interference.orchestrator/type"
APP_ANNOTATION = "interference.orchestrator/app"
MONITORING_NAMESPACE = "monitoring"
RELEASE = "kube-prometheus-stack"
OFFLINE_RELEASE = "interference-monitoring"
PROBE = "app.kubernetes.io/name=interference-probe"
RESOURCES = {"cpu", "llc", "memory_bandwidth"}
# How long Prometheus may take to answer on its published port.
PROMETHEUS_WAIT_S = 120
PASSWORD_FILE = Path("~/.config/interference-orchestrator/grafana-admin-password").expanduser()
# What the offline (Debian) source runs for each Phoronix test an app names.
DEBIAN_WORKLOADS = {"pts/c-ray": "povray", "pts/compress-7zip": "7zip", "pts/mbw": "mbw",
                    "pts/stressapptest": "stressapptest"}
RESULT = re.compile(r"^RESULT (\{.*\})$", re.MULTILINE)

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
    kubeconfig = variables.get("cluster_kubeconfig", "~/.kube/config")
    name = variables["cluster_name"]
    return {
        "name": name,
        "workers": int(variables["cluster_workers"]),
        "label_key": variables.get("node_labels_key", "group"),
        "label_prefix": variables.get("node_labels_prefix", "node"),
        "namespace": variables.get("apps_namespace", "interference-apps"),
        "kubeconfig": str(Path(kubeconfig).expanduser()),
        "context": f"kind-{name}",
        "grafana_port": int(variables.get("grafana_host_port", 3000)),
        "prometheus_port": int(variables.get("prometheus_host_port", 9090)),
        "base_apps": variables["molecule_base_apps"],
        "kind_config": Path(f"~/.cache/interference-orchestrator/kind-{name}.yaml").expanduser(),
    }


@pytest.fixture(scope="module")
def api(scenario: dict[str, Any]) -> client.ApiClient:
    return config.new_client_from_config(config_file=scenario["kubeconfig"], context=scenario["context"])


@pytest.fixture(scope="module")
def declared(api: client.ApiClient, scenario: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """App name -> the app as declared, from each Deployment's own annotation (the side effect changes the list)."""
    deployments: list[Any] = (
        client.AppsV1Api(api).list_namespaced_deployment(scenario["namespace"], label_selector=MANAGED).items
    )
    assert deployments, "site.yml deployed no app"
    return {d.metadata.name: json.loads(d.metadata.annotations[APP_ANNOTATION]) for d in deployments}


def app_pods(api: client.ApiClient, namespace: str) -> list[Any]:
    pods: list[Any] = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=MANAGED).items
    return [pod for pod in pods if pod.metadata.deletion_timestamp is None]


def pod_of(api: client.ApiClient, namespace: str, app: str) -> Any:
    return next(p for p in app_pods(api, namespace) if p.metadata.labels["app.kubernetes.io/name"] == app)


@pytest.fixture(scope="module")
def offline(api: client.ApiClient, scenario: dict[str, Any]) -> bool:
    """Whether the run used the offline image source: its app images are the Debian workloads."""
    images = {pod.spec.containers[0].image for pod in app_pods(api, scenario["namespace"])}
    return all(image.startswith("interference-orchestrator/") for image in images)


def exec_in(api: client.ApiClient, pod: Any, command: list[str], timeout: int = 300) -> str:
    """Run `command` in the pod's container (the real exec API, as kubectl does); return stdout and stderr."""
    return str(
        stream(
            client.CoreV1Api(api).connect_get_namespaced_pod_exec,
            pod.metadata.name,
            pod.metadata.namespace,
            command=command,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            _request_timeout=timeout,
        )
    )


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


def test_grafana_port_is_mapped_in_the_kind_config_and_published_by_docker(scenario: dict[str, Any]) -> None:
    rendered = yaml.safe_load(scenario["kind_config"].read_text())
    (control_plane,) = [node for node in rendered["nodes"] if node["role"] == "control-plane"]
    port = scenario["grafana_port"]
    assert {"containerPort": 30300, "hostPort": port, "listenAddress": "127.0.0.1", "protocol": "TCP"} in control_plane[
        "extraPortMappings"
    ]
    published = subprocess.run(
        ["docker", "port", f"{scenario['name']}-control-plane", "30300/tcp"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert published == [f"127.0.0.1:{port}"]


def test_every_app_pod_runs_in_a_real_container_on_its_planned_node(
    api: client.ApiClient, scenario: dict[str, Any]
) -> None:
    deployments: list[Any] = (
        client.AppsV1Api(api).list_namespaced_deployment(scenario["namespace"], label_selector=MANAGED).items
    )
    assert deployments, "site.yml deployed no app"
    pods = app_pods(api, scenario["namespace"])
    for deployment in deployments:
        planned = deployment.metadata.annotations[PLANNED].split(",")
        mine = [p for p in pods if p.metadata.labels["app.kubernetes.io/name"] == deployment.metadata.name]
        assert sorted(p.spec.node_name for p in mine) == sorted(planned), deployment.metadata.name
        for pod in mine:
            assert pod.status.phase == "Running", pod.metadata.name
            (status,) = pod.status.container_statuses
            # A real container: containerd gave it an ID and it is running now.
            assert re.fullmatch(r"containerd://[0-9a-f]{64}", status.container_id or ""), status.container_id
            assert status.state.running is not None and status.ready


def test_placed_interference_is_at_the_lower_bound(
    api: client.ApiClient, scenario: dict[str, Any], declared: dict[str, dict[str, Any]]
) -> None:
    """Same-type apps share a node only as far as the count forces it.

    Only for the apps placed together (converge): after the side effect's add
    and remove, running apps keep their nodes by design, so a node emptied by
    the removal is not refilled and the bound need not hold.
    """
    if sorted(declared) != sorted(app["name"] for app in scenario["base_apps"]):
        pytest.skip("after the side effect running apps keep their nodes by design; checked after converge")
    by_node: dict[str, list[tuple[float, ...]]] = {}
    for pod in app_pods(api, scenario["namespace"]):
        by_node.setdefault(pod.spec.node_name, []).append(profile_for_type(pod.metadata.labels[TYPE_LABEL]))
    total = sum(
        dot(profiles[i], profiles[j])
        for profiles in by_node.values()
        for i in range(len(profiles))
        for j in range(i + 1, len(profiles))
    )
    profiles = [profile for node in by_node.values() for profile in node]
    assert by_node
    assert total == pytest.approx(interference_lower_bound(profiles, scenario["workers"])), by_node


def test_app_containers_run_the_content_hash_images(
    api: client.ApiClient, scenario: dict[str, Any], declared: dict[str, dict[str, Any]], offline: bool
) -> None:
    images = {name: app["image"] for name, app in declared.items()}
    for pod in app_pods(api, scenario["namespace"]):
        app = pod.metadata.labels["app.kubernetes.io/name"]
        (container,) = pod.spec.containers
        expected = (
            "interference-orchestrator/" + DEBIAN_WORKLOADS[images[app]] if offline else images[app]
        )
        assert re.fullmatch(re.escape(expected) + r":h-[0-9a-f]{12}", container.image), container.image


@pytest.mark.parametrize("app", ["c-ray", "mbw"])
def test_run_benchmark_prints_a_result_line_in_a_cpu_and_a_memory_pod(
    api: client.ApiClient, scenario: dict[str, Any], declared: dict[str, dict[str, Any]], offline: bool, app: str
) -> None:
    if not offline:
        pytest.skip("the Phoronix images run a full PTS test (minutes); the offline workloads are checked here")
    output = exec_in(api, pod_of(api, scenario["namespace"], app), ["run-benchmark"])
    (line,) = RESULT.findall(output)
    result = json.loads(line)
    assert result["workload"] == DEBIAN_WORKLOADS[declared[app]["image"]]
    assert result["source"] == "debian"
    assert result["value"] > 0 and result["wall_seconds"] > 0
    assert set(result) == {"workload", "source", "metric", "unit", "value", "better", "wall_seconds"}


@pytest.fixture(scope="module")
def echo_server(api: client.ApiClient, scenario: dict[str, Any]) -> Any:
    """An HTTP server pod (etcd, an image every node has) pinned to the last worker, with a Service."""
    core = client.CoreV1Api(api)
    namespace = "interference-network-check"
    etcd_image = next(
        c.image
        for p in core.list_namespaced_pod("kube-system", label_selector="component=etcd").items
        for c in p.spec.containers
    )
    server_node = worker_names(scenario)[-1]
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        core.create_namespaced_pod(namespace, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "server", "labels": {"app": "server"}},
            "spec": {
                "nodeName": server_node,
                "containers": [{
                    "name": "etcd", "image": etcd_image, "imagePullPolicy": "Never",
                    "command": ["etcd", "--data-dir=/data", "--listen-client-urls=http://0.0.0.0:2379",
                                "--advertise-client-urls=http://127.0.0.1:2379",
                                "--listen-peer-urls=http://127.0.0.1:2380"],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }],
                "volumes": [{"name": "data", "emptyDir": {}}],
            },
        })
        core.create_namespaced_service(namespace, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "server"},
            "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 2379}]},
        })

        def ready() -> Any:
            pod = core.read_namespaced_pod("server", namespace)
            assert pod.status.phase == "Running" and pod.status.pod_ip, pod.status
            return pod

        yield eventually(ready, attempts=60, pause=2.0), f"server.{namespace}.svc.cluster.local"
    finally:
        core.delete_namespace(namespace)


@pytest.mark.parametrize("target", ["pod-ip", "service"])
def test_pods_reach_a_pod_on_another_node(
    api: client.ApiClient, scenario: dict[str, Any], echo_server: Any, target: str
) -> None:
    server, service = echo_server
    client_pod = next(p for p in app_pods(api, scenario["namespace"]) if p.spec.node_name != server.spec.node_name)
    host, port = (server.status.pod_ip, 2379) if target == "pod-ip" else (service, 80)
    # bash's /dev/tcp: the app images have bash but no HTTP client.
    script = (
        f"exec 3<>/dev/tcp/{host}/{port} && printf 'GET /version HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n' >&3 && cat <&3"
    )

    def answered() -> str:
        reply = exec_in(api, client_pod, ["timeout", "10", "bash", "-c", script], timeout=30)
        assert "etcdserver" in reply, reply
        return reply

    assert "etcdserver" in eventually(answered, attempts=10, pause=3.0)


def require_grafana(offline: bool) -> None:
    if offline:
        pytest.skip("image source offline: the offline chart installs no Grafana (AGPL, it cannot be had offline)")


def prometheus_url(scenario: dict[str, Any]) -> str:
    return f"http://localhost:{scenario['prometheus_port']}"


def grafana(scenario: dict[str, Any], path: str) -> Any:
    """GET a Grafana API path as the admin the monitoring role stored; return the JSON body."""
    credentials = base64.b64encode(f"admin:{PASSWORD_FILE.read_text().strip()}".encode()).decode()
    url = f"http://localhost:{scenario['grafana_port']}{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"Basic {credentials}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        return json.load(response)


def test_monitoring_release_is_deployed(api: client.ApiClient, offline: bool) -> None:
    release = OFFLINE_RELEASE if offline else RELEASE
    # helm 3 keeps each release revision in a Secret labelled owner=helm,name=<release>,status=<status>.
    secrets = (
        client.CoreV1Api(api)
        .list_namespaced_secret(MONITORING_NAMESPACE, label_selector=f"owner=helm,name={release},status=deployed")
        .items
    )
    assert len(secrets) == 1, f"helm release {release} is not deployed in namespace {MONITORING_NAMESPACE}"


def test_helm_test_of_the_offline_chart_passes(scenario: dict[str, Any], offline: bool) -> None:
    if not offline:
        pytest.skip("kube-prometheus-stack ships no helm test of ours; the offline chart's queries Prometheus")
    run = subprocess.run(
        ["helm", "test", OFFLINE_RELEASE, "--namespace", MONITORING_NAMESPACE, "--kubeconfig", scenario["kubeconfig"],
         "--kube-context", scenario["context"], "--timeout", "4m", "--logs"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Phase:          Succeeded" in run.stdout, run.stdout


def test_prometheus_port_is_mapped_in_the_kind_config_and_published_by_docker(scenario: dict[str, Any]) -> None:
    rendered = yaml.safe_load(scenario["kind_config"].read_text())
    (control_plane,) = [node for node in rendered["nodes"] if node["role"] == "control-plane"]
    port = scenario["prometheus_port"]
    assert {"containerPort": 30090, "hostPort": port, "listenAddress": "127.0.0.1", "protocol": "TCP"} in control_plane[
        "extraPortMappings"
    ]
    published = subprocess.run(
        ["docker", "port", f"{scenario['name']}-control-plane", "30090/tcp"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert published == [f"127.0.0.1:{port}"]


def test_prometheus_answers_on_the_kind_mapped_port(scenario: dict[str, Any]) -> None:
    wait_ready(prometheus_url(scenario), within_s=PROMETHEUS_WAIT_S)
    assert query(prometheus_url(scenario), "vector(1)")[0]["value"][1] == "1"


def test_a_probe_pod_runs_ready_on_every_worker(api: client.ApiClient, scenario: dict[str, Any]) -> None:
    pods: list[Any] = client.CoreV1Api(api).list_namespaced_pod(MONITORING_NAMESPACE, label_selector=PROBE).items
    by_node = {pod.spec.node_name: pod for pod in pods if pod.metadata.deletion_timestamp is None}
    problems = []
    for worker in worker_names(scenario):
        pod = by_node.get(worker)
        if pod is None:
            problems.append(f"node {worker}: no interference probe pod")
        elif pod.status.phase != "Running" or not all(c.ready for c in pod.status.container_statuses or []):
            problems.append(f"node {worker}: probe pod {pod.metadata.name} is {pod.status.phase}, not Running, ready")
    assert not problems, "; ".join(problems)
    assert f"{scenario['name']}-control-plane" not in by_node, "the probe runs on workers only"


def test_every_scrape_target_is_up(scenario: dict[str, Any], offline: bool) -> None:
    if not offline:
        pytest.skip("job names of kube-prometheus-stack's targets are not verified here (no registry on this machine)")
    workers = worker_names(scenario)
    nodes = [f"{scenario['name']}-control-plane", *workers]
    expected = {"kubernetes-cadvisor": nodes, "node-exporter": nodes, "interference-probe": workers}

    def all_up() -> None:
        problems = target_problems(active_targets(prometheus_url(scenario)), expected)
        assert not problems, "; ".join(problems)

    eventually(all_up, attempts=12, pause=5.0)


def test_cadvisor_has_cpu_series_for_every_app_pod(api: client.ApiClient, scenario: dict[str, Any]) -> None:
    namespace = scenario["namespace"]
    pods = {pod.metadata.name for pod in app_pods(api, namespace)}
    assert pods, f"no app pod in namespace {namespace}: nothing to find CPU series for"
    promql = f'sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace="{namespace}",container!=""}}[1m]))'

    def every_pod() -> None:
        found = {series["metric"]["pod"] for series in query(prometheus_url(scenario), promql)}
        assert pods <= found, f"no per-pod CPU series for {sorted(pods - found)}"

    eventually(every_pod, attempts=18, pause=5.0)


def test_the_probe_reports_every_resource_of_every_worker_within_0_and_1(scenario: dict[str, Any]) -> None:
    def reported() -> None:
        series = query(prometheus_url(scenario), "interference_probe_pressure")
        found = {(s["metric"]["node"], s["metric"]["resource"]): float(s["value"][1]) for s in series}
        wanted = {(node, resource) for node in worker_names(scenario) for resource in RESOURCES}
        assert wanted <= set(found), f"no probe pressure for {sorted(wanted - set(found))}"
        assert all(0 <= value <= 1 for value in found.values()), found

    eventually(reported, attempts=12, pause=5.0)


def test_grafana_answers_on_localhost_with_the_stored_password_not_the_default(
    scenario: dict[str, Any], offline: bool
) -> None:
    require_grafana(offline)
    health = eventually(lambda: grafana(scenario, "/api/health"))
    assert health["database"] == "ok"
    assert PASSWORD_FILE.stat().st_mode & 0o777 == 0o600
    assert PASSWORD_FILE.read_text().strip() != "prom-operator"


def test_grafana_loaded_the_interference_overview_dashboard(scenario: dict[str, Any], offline: bool) -> None:
    require_grafana(offline)
    dashboard = eventually(lambda: grafana(scenario, "/api/dashboards/uid/interference-overview"))["dashboard"]
    assert dashboard["title"] == "Interference overview"


def test_prometheus_sees_the_app_and_type_pod_labels(
    scenario: dict[str, Any], declared: dict[str, dict[str, Any]], offline: bool
) -> None:
    require_grafana(offline)
    promql = urllib.parse.quote(
        f'kube_pod_labels{{namespace="{scenario["namespace"]}",label_interference_orchestrator_type!=""}}'
    )

    def labelled_apps() -> set[tuple[str, str]]:
        body = grafana(scenario, f"/api/datasources/proxy/uid/prometheus/api/v1/query?query={promql}")
        found = {
            (r["metric"]["label_app_kubernetes_io_name"], r["metric"]["label_interference_orchestrator_type"])
            for r in body["data"]["result"]
        }
        assert found == {(name, app["type"]) for name, app in declared.items()}
        return found

    eventually(labelled_apps, attempts=36)

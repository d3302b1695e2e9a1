"""The offline monitoring chart as helm renders it with the values the role writes.

`helm template` (the helm `make tools` builds) over roles/monitoring/files/charts/interference-monitoring
with the role's offline-values template: every object validates against the
Kubernetes 1.34 schema (strict), the probe runs on workers only with a CPU
request, no CPU limit and its memory limit, its node from the downward API,
and Prometheus scrapes each listed node, labelled by node. The install itself
needs real containers: tests/integration/test_probe_kind.py and molecule/kind.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.playbook_json import REPO, run_playbook
from tests.support.tools import tools_bin

ROLE = REPO / "roles" / "monitoring"
CHART = ROLE / "files" / "charts" / "interference-monitoring"
HELM = tools_bin() / "helm"
NODES = [{"name": "c-control-plane", "address": "172.18.0.2", "worker": False},
         {"name": "c-worker", "address": "172.18.0.3", "worker": True},
         {"name": "c-worker2", "address": "172.18.0.4", "worker": True}]

pytestmark = pytest.mark.skipif(not HELM.exists(), reason="no helm in the tools folder: run `make tools` first")


def helm_template(values: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HELM), "template", "interference-monitoring", str(CHART), "--namespace", "monitoring",
                           "-f", str(values), *extra], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    tmp = tmp_path_factory.mktemp("offline-chart")
    values = tmp / "values.yaml"
    run = run_playbook(tmp, [{
        "hosts": "localhost", "gather_facts": False, "vars_files": [str(ROLE / "defaults" / "main.yml")],
        "vars": {"monitoring_prometheus_image": "interference-orchestrator/rootfs-monitoring:h-0",
                 "monitoring_probe_image": "interference-orchestrator/interference-probe:h-0",
                 "monitoring_scrape_nodes": NODES},
        "tasks": [{"ansible.builtin.template": {"src": str(ROLE / "templates" / "offline-values.yaml.j2"),
                                                "dest": str(values), "mode": "0600"}}],
    }])
    assert run.returncode == 0, run.report
    rendered = helm_template(values)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_every_object_is_valid_kubernetes(objects: dict[tuple[str, str], Any]) -> None:
    assert {kind for kind, _ in objects} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                                             "Deployment", "Service", "DaemonSet", "Pod"}
    for obj in objects.values():
        kubernetes_validate.validate(obj, "1.34.0", strict=True)


def test_the_probe_runs_on_workers_with_a_cpu_request_no_cpu_limit_and_its_node_name(
    objects: dict[tuple[str, str], Any],
) -> None:
    spec = objects[("DaemonSet", "interference-monitoring-interference-probe")]["spec"]["template"]["spec"]
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]
    (container,) = spec["containers"]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "128Mi"}}
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert "--interval=10s" in container["args"] and "--duration=100ms" in container["args"]
    assert container["image"] == "interference-orchestrator/interference-probe:h-0"


def test_prometheus_scrapes_every_listed_node_labelled_by_node(objects: dict[tuple[str, str], Any]) -> None:
    config = yaml.safe_load(objects[("ConfigMap", "interference-monitoring-prometheus")]["data"]["prometheus.yml"])
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"prometheus", "kubernetes-cadvisor", "node-exporter", "interference-probe"}

    def nodes(job: str) -> list[str]:
        return [c["labels"]["node"] for c in jobs[job]["static_configs"]]

    assert nodes("kubernetes-cadvisor") == nodes("node-exporter") == ["c-control-plane", "c-worker", "c-worker2"]
    assert nodes("interference-probe") == ["c-worker", "c-worker2"]
    assert jobs["interference-probe"]["static_configs"][0]["targets"] == ["172.18.0.3:9477"]
    assert jobs["kubernetes-cadvisor"]["relabel_configs"][0]["replacement"] == "/api/v1/nodes/$1/proxy/metrics/cadvisor"


def test_the_chart_refuses_to_render_without_nodes(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("nodes: []\n")
    rendered = helm_template(values)
    assert rendered.returncode != 0
    assert "values: nodes is empty" in rendered.stderr


def test_beside_kube_prometheus_stack_only_the_probe_and_its_podmonitor_render(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"prometheus": {"enabled": False}, "nodeExporter": {"enabled": False},
                                      "probe": {"podMonitor": {"enabled": True,
                                                               "labels": {"release": "kube-prometheus-stack"}}}}))
    rendered = helm_template(values)
    assert rendered.returncode == 0, rendered.stderr
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert sorted(d["kind"] for d in docs) == ["DaemonSet", "PodMonitor"]
    (monitor,) = [d for d in docs if d["kind"] == "PodMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"

"""site.yml with `cluster_provider: existing` on a cluster shaped like EKS (kwok), with no --skip-tags.

The nodes are what an EKS managed node group registers: named
ip-10-0-x-y.ec2.internal, no control-plane node, three zones
(topology.kubernetes.io/zone), spot and on-demand capacity
(eks.amazonaws.com/capacityType), 2 to 16 CPUs. A Grafana runs already, the
way kube-prometheus-stack deploys it: a Deployment whose dashboard sidecar
container has LABEL=grafana_dashboard in its environment. kwok plays the
kubelets, so everything is a real API object read back through the API.

The tests run in order on one cluster: check mode changes nothing; a real run
in dashboards mode writes only the dashboard ConfigMap (no chart) where that
Grafana looks, labels the workers and places the apps; a rerun with the mode
left to auto finds the sidecar by itself and changes nothing; a label no
sidecar watches makes auto choose install, which offline is one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kwok
from tests.support.playbook_json import REPO, PlaybookRun, run_playbook_file

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

GRAFANA_NAMESPACE = "observability"
DASHBOARD = "interference-overview-dashboard"
APPS_NAMESPACE = "interference-apps"
# name, CPUs, zone, capacity type: two managed node groups (spot, on-demand) over three zones.
EKS_NODES = [
    ("ip-10-0-1-23.ec2.internal", 2, "eu-west-1a", "SPOT"),
    ("ip-10-0-1-57.ec2.internal", 4, "eu-west-1a", "ON_DEMAND"),
    ("ip-10-0-2-14.ec2.internal", 8, "eu-west-1b", "SPOT"),
    ("ip-10-0-2-201.ec2.internal", 16, "eu-west-1b", "ON_DEMAND"),
    ("ip-10-0-3-9.ec2.internal", 4, "eu-west-1c", "SPOT"),
    ("ip-10-0-3-140.ec2.internal", 16, "eu-west-1c", "ON_DEMAND"),
]
INSTANCE_TYPES = {2: "m5.large", 4: "m5.xlarge", 8: "m5.2xlarge", 16: "m5.4xlarge"}


def eks_node(name: str, cpus: int, zone: str, capacity: str) -> dict[str, Any]:
    group = "spot" if capacity == "SPOT" else "on-demand"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": INSTANCE_TYPES[cpus],
        "eks.amazonaws.com/capacityType": capacity,
        "eks.amazonaws.com/nodegroup": group,
    }
    capacity_list = {"cpu": str(cpus), "memory": f"{cpus * 4}Gi", "pods": "58"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"providerID": f"aws:///{zone}/i-{name.partition('.')[0].replace('-', '')[2:]:0>17}"},
        "status": {"allocatable": capacity_list, "capacity": capacity_list},
    }


def grafana_with_dashboard_sidecar() -> dict[str, Any]:
    """Grafana as kube-prometheus-stack deploys it (only the parts the detection reads are real)."""
    labels = {"app.kubernetes.io/name": "grafana"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "grafana", "namespace": GRAFANA_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "grafana-sc-dashboard",
                            "image": "quay.io/kiwigrid/k8s-sidecar:1.30.0",
                            "env": [
                                {"name": "METHOD", "value": "WATCH"},
                                {"name": "LABEL", "value": "grafana_dashboard"},
                                {"name": "LABEL_VALUE", "value": "1"},
                                {"name": "FOLDER", "value": "/tmp/dashboards"},
                                {"name": "RESOURCE", "value": "both"},
                            ],
                        },
                        {"name": "grafana", "image": "docker.io/grafana/grafana:12.0.0"},
                    ]
                },
            },
        },
    }


class EksLikeCluster:
    def __init__(self, cluster: kwok.KwokCluster, tmp: Path) -> None:
        self.kwok = cluster
        self.tmp = tmp
        self.core = cluster.api()
        self.apps = cluster.apps_api()

    def site(self, *, check: bool = False, args: list[str] | None = None, **extra: Any) -> PlaybookRun:
        variables = {
            "cluster_provider": "existing",
            "cluster_kubeconfig": str(self.kwok.kubeconfig),
            "cluster_context": f"kwok-{self.kwok.name}",
            "apps_wait_timeout": 120,
            **extra,
        }
        env = {"PATH": f"{kwok.TOOLS}:{REPO / '.venv' / 'bin'}:{os.environ.get('PATH', '')}"}
        return run_playbook_file(self.tmp, REPO / "site.yml", variables, check=check, env=env, args=args)

    def state(self) -> dict[str, Any]:
        """Everything a run could change: node labels, namespaces, Deployments, ConfigMaps, Secrets."""
        return {
            # The labels kwok's kubelets add on their own (beta.kubernetes.io/*) come and go with them.
            "nodes": {
                n.metadata.name: {k: v for k, v in n.metadata.labels.items() if not k.startswith("beta.kubernetes.io/")}
                for n in self.core.list_node().items
            },
            "namespaces": sorted(ns.metadata.name for ns in self.core.list_namespace().items),
            # generation moves with the spec only (status updates from the controllers do not count).
            "deployments": sorted(
                (d.metadata.namespace, d.metadata.name, d.metadata.generation)
                for d in self.apps.list_deployment_for_all_namespaces().items
            ),
            # kube-root-ca.crt is the root-ca-cert-publisher's, written into each new namespace
            # whenever the controller gets to it: under CI load one landed in a namespace made
            # before `before` was read, during the check run (a run's own namespaces show above).
            "configmaps": sorted(
                (c.metadata.namespace, c.metadata.name, json.dumps(c.metadata.labels), json.dumps(c.data))
                for c in self.core.list_config_map_for_all_namespaces().items
                if c.metadata.name != "kube-root-ca.crt"
            ),
            "secrets": sorted(
                (s.metadata.namespace, s.metadata.name) for s in self.core.list_secret_for_all_namespaces().items
            ),
        }

    def helm_releases(self) -> list[str]:
        """helm keeps each release revision in a Secret labelled owner=helm."""
        secrets = self.core.list_secret_for_all_namespaces(label_selector="owner=helm").items
        return [f"{s.metadata.namespace}/{s.metadata.name}" for s in secrets]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EksLikeCluster]:
    workdir = tmp_path_factory.mktemp("eks-kwok")
    kwok_cluster = kwok.KwokCluster(name=f"eks-it-{kwok.free_port()}", workdir=workdir)
    kwok_cluster.create()
    try:
        state = EksLikeCluster(kwok_cluster, workdir)
        for node in EKS_NODES:
            state.core.create_node(eks_node(*node))
        state.core.create_namespace({"metadata": {"name": GRAFANA_NAMESPACE}})
        state.apps.create_namespaced_deployment(GRAFANA_NAMESPACE, grafana_with_dashboard_sidecar())
        yield state
    finally:
        kwok_cluster.delete()


def one_message(run: PlaybookRun, prefix: str) -> str:
    (message,) = [m for m in run.messages() if m.startswith(prefix)]
    return message


def test_check_mode_runs_every_stage_and_changes_nothing(cluster: EksLikeCluster) -> None:
    before = cluster.state()
    run = cluster.site(check=True, monitoring_mode="dashboards")
    assert run.returncode == 0, run.failures()
    assert cluster.state() == before
    # Every stage ran (nothing skipped by tag) and said what it would do.
    dashboards = one_message(run, "monitoring: dashboards")
    assert f"Deployment {GRAFANA_NAMESPACE}/grafana runs a Grafana dashboard sidecar" in dashboards
    assert f"in namespace {GRAFANA_NAMESPACE} labelled grafana_dashboard=1" in dashboards
    assert "pts_images: skipped on existing: images_registry is not set" in one_message(run, "pts_images:")
    assert run.stats["changed"] > 0  # the labels, the dashboard and the apps it would write


def test_dashboards_mode_writes_the_dashboard_where_grafana_looks_and_installs_no_chart(
    cluster: EksLikeCluster,
) -> None:
    namespaces_before = cluster.state()["namespaces"]
    run = cluster.site(monitoring_mode="dashboards")
    assert run.returncode == 0, run.failures()

    configmap = cluster.core.read_namespaced_config_map(DASHBOARD, GRAFANA_NAMESPACE)
    assert configmap.metadata.labels["grafana_dashboard"] == "1"
    assert json.loads(configmap.data["interference-overview.json"])["title"] == "Interference overview"
    assert cluster.helm_releases() == []
    # No monitoring namespace, no Grafana credentials: only the apps' namespace is new.
    assert sorted(set(cluster.state()["namespaces"]) - set(namespaces_before)) == [APPS_NAMESPACE]
    assert run.results("Install kube-prometheus-stack and the dashboard")[0].get("skipped") is True

    # The EKS workers are labelled in natural name order and the apps placed on them.
    labels = cluster.state()["nodes"]
    assert sorted(labels[name]["group"] for name, *_ in EKS_NODES) == [f"node{i}" for i in range(1, 7)]
    assert labels["ip-10-0-1-23.ec2.internal"]["group"] == "node1"
    deployments = cluster.apps.list_namespaced_deployment(APPS_NAMESPACE).items
    assert {d.metadata.name for d in deployments} == {"c-ray", "compress-7zip", "mbw", "stressapptest"}
    # Without a registry the images stay as written.
    assert {d.spec.template.spec.containers[0].image for d in deployments} == {
        "pts/c-ray", "pts/compress-7zip", "pts/mbw", "pts/stressapptest"
    }


def test_auto_mode_finds_the_running_grafana_and_a_rerun_changes_nothing(cluster: EksLikeCluster) -> None:
    before = cluster.state()
    run = cluster.site()
    assert run.returncode == 0, run.failures()
    assert run.stats["changed"] == 0, run.failures()
    assert cluster.state() == before
    message = one_message(run, "monitoring: dashboards")
    assert message.startswith(
        f"monitoring: dashboards (auto: Deployment {GRAFANA_NAMESPACE}/grafana runs a Grafana dashboard sidecar"
        " watching label grafana_dashboard)"
    )
    assert "\n" not in message


def test_auto_mode_without_a_sidecar_chooses_install_and_says_offline_skips_it(cluster: EksLikeCluster) -> None:
    before = cluster.state()
    run = cluster.site(args=["--tags", "monitoring"], image_source="offline",
                       monitoring_dashboard_label="team_dashboard")
    assert run.returncode == 0, run.failures()
    message = one_message(run, "monitoring: skipped on existing: the image source is offline")
    assert "auto: no Deployment in the cluster runs a Grafana dashboard sidecar watching label team_dashboard" in (
        message
    )
    # Both ways out: a registry for the offline chart's images, or the dashboard alone.
    assert "without images_registry" in message
    assert "monitoring_mode=dashboards to ship only the dashboard" in message
    assert run.stats["changed"] == 0
    assert cluster.state() == before


def test_off_skips_the_stage_in_one_line(cluster: EksLikeCluster) -> None:
    run = cluster.site(args=["--tags", "monitoring"], monitoring_mode="off")
    assert run.returncode == 0, run.failures()
    assert one_message(run, "monitoring:") == "monitoring: skipped: monitoring_mode is off."
    assert run.results("Look for a Grafana dashboard sidecar in the cluster")[0].get("skipped") is True

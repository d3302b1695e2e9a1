"""scheduler_extender: the rendered KubeSchedulerConfiguration, policy and in-cluster manifests.

Rendered by the role's own entry points through ansible-playbook (as site.yml
runs them); the manifests are checked against the Kubernetes 1.34 schemas
(kubernetes-validate) and for what the issue asks: least RBAC (reads, and Bindings), the
kubescheduler.config.k8s.io/v1 extender entry, the upstream scheduler image at
the cluster's version. The kind path needs a Docker engine, absent here; the
kwok path runs for real in tests/integration/test_extender_kwok.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_quantity

from interference_extender.__main__ import limits_from, parse_args
from interference_extender.policy import policy_from_mapping
from interference_extender.server import ServerLimits, memory_bound_bytes
from tests.support.playbook_json import PlaybookRun, run_playbook
from tests.support.pod_security import hardening_gaps

from .test_scheduler_plugins_templates import by_kind as plugins_by_kind
from .test_scheduler_plugins_templates import render_manifests

KUBERNETES_VERSION = "1.34"


def include(tmp_path: Path, entry: str, variables: dict[str, Any], *, check: bool = False) -> PlaybookRun:
    plays = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Run the entry point",
                    "ansible.builtin.include_role": {
                        "name": "interference.orchestrator.scheduler_extender",
                        "tasks_from": entry,
                    },
                    "vars": variables,
                },
                {"name": "Show the manifests", "ansible.builtin.debug": {"var": "scheduler_extender_manifests"}},
            ],
        }
    ]
    run = run_playbook(tmp_path, plays, check=check)
    assert run.returncode == 0, run.stderr + str(run.report)
    return run


def render_config(tmp_path: Path, **extra: Any) -> tuple[PlaybookRun, Path]:
    out = tmp_path / "out"
    run = include(tmp_path, "scheduler_config", {"scheduler_extender_local_dir": str(out), **extra})
    return run, out


VARIANTS: dict[str, dict[str, Any]] = {
    "listen": {"scheduler_extender_local_listen": "127.0.0.1:9999"},
    "policy": {
        "scheduler_extender_weights": {"interference": 5, "gpu_memory": 0, "spot": 2, "zone_spread": 1},
        "scheduler_extender_forbidden_pairs": [["memory", "memory"], ["cpu", "memory"]],
    },
    "filter-off": {"scheduler_extender_filter": False},
    "bind-off": {"scheduler_extender_bind": False},
    "managed": {"scheduler_extender_managed_resources": ["nvidia.com/gpu"]},
    # The apps role's sharing reaches the extender's policy unless the role is given its own.
    "sharing": {"apps_sharing": {"label": "kubernetes.io/os", "pressures": {"memory_bandwidth": 0.4}}},
}


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The scheduler_config entry point with each of VARIANTS, in one ansible-playbook run: name -> output folder."""
    tmp_path = tmp_path_factory.mktemp("configs")
    tasks = [
        {
            "name": f"Render {name}",
            "ansible.builtin.include_role": {
                "name": "interference.orchestrator.scheduler_extender",
                "tasks_from": "scheduler_config",
            },
            "vars": {"scheduler_extender_local_dir": str(tmp_path / name), **extra},
        }
        for name, extra in VARIANTS.items()
    ]
    run = run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}])
    assert run.returncode == 0, run.stderr + str(run.report)
    return {name: tmp_path / name for name in VARIANTS}


def test_kwok_scheduler_configuration(configs: dict[str, Path]) -> None:
    out = configs["listen"]
    config = yaml.safe_load((out / "kube-scheduler-config.yaml").read_text())
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == ["default-scheduler", "interference-scheduler"]
    assert config["leaderElection"] == {"leaderElect": False}
    pki = out / "pki"
    assert config["extenders"] == [
        {
            "urlPrefix": "https://127.0.0.1:9999",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "bindVerb": "bind",
            "weight": 5,
            "enableHTTPS": True,
            "tlsConfig": {"certFile": str(pki / "scheduler.crt"), "keyFile": str(pki / "scheduler.key"),
                          "caFile": str(pki / "ca.crt")},
            "nodeCacheCapable": True,
            "httpTimeout": "5s",
            "ignorable": True,
        }
    ]


def test_policy_file_is_valid_for_the_service(configs: dict[str, Path]) -> None:
    out = configs["policy"]
    policy = policy_from_mapping(yaml.safe_load((out / "policy.yml").read_text()))
    assert policy.weights.interference == 5
    assert policy.weights.gpu_memory == 0
    assert policy.forbidden_pairs == {frozenset({"memory"}), frozenset({"cpu", "memory"})}
    assert policy.scheduler_names == {"interference-scheduler"}
    assert not policy.sharing.active


def test_policy_file_carries_the_apps_sharing(configs: dict[str, Path]) -> None:
    text = (configs["sharing"] / "policy.yml").read_text()
    policy = policy_from_mapping(yaml.safe_load(text))
    assert policy.sharing.label == "kubernetes.io/os"
    assert policy.sharing.shares == (0.0, 0.4, 0.0, 0.0, 0.0)
    assert "sharing" not in (configs["policy"] / "policy.yml").read_text()


def test_prioritize_only_when_the_filter_is_off(configs: dict[str, Path]) -> None:
    out = configs["filter-off"]
    (extender,) = yaml.safe_load((out / "kube-scheduler-config.yaml").read_text())["extenders"]
    assert "filterVerb" not in extender
    assert extender["prioritizeVerb"] == "prioritize"


def test_kube_scheduler_binds_when_the_extender_bind_is_off(configs: dict[str, Path]) -> None:
    (extender,) = yaml.safe_load((configs["bind-off"] / "kube-scheduler-config.yaml").read_text())["extenders"]
    assert "bindVerb" not in extender
    assert extender["prioritizeVerb"] == "prioritize"


def test_managed_resources_when_asked(configs: dict[str, Path]) -> None:
    out = configs["managed"]
    (extender,) = yaml.safe_load((out / "kube-scheduler-config.yaml").read_text())["extenders"]
    assert extender["managedResources"] == [{"name": "nvidia.com/gpu", "ignoredByScheduler": False}]


def test_second_run_changes_nothing_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    first, _ = render_config(tmp_path)
    assert first.stats["changed"] >= 2
    second, _ = render_config(tmp_path)
    assert second.stats["changed"] == 0
    fresh = tmp_path / "fresh"
    include(tmp_path, "scheduler_config", {"scheduler_extender_local_dir": str(fresh)}, check=True)
    assert not fresh.exists()


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    run = include(tmp_path_factory.mktemp("manifests"), "manifests", {"scheduler_extender_cluster_version": "v1.34.4"})
    (shown,) = run.results("Show the manifests")
    objects: list[dict[str, Any]] = shown["scheduler_extender_manifests"]
    return objects


def by_kind(manifests: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def test_manifests_are_valid_kubernetes_objects(manifests: list[dict[str, Any]]) -> None:
    assert len(manifests) == 20
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_extender_rbac_reads_pods_and_nodes_and_creates_bindings_only(manifests: list[dict[str, Any]]) -> None:
    role = by_kind(manifests, "ClusterRole", "interference-extender")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
    ]
    binding = by_kind(manifests, "ClusterRoleBinding", "interference-extender")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "interference-extender", "namespace": "kube-system"}
    ]
    # Bindings only in the apps namespace, for the extender and the second scheduler.
    binder = by_kind(manifests, "Role", "interference-scheduler-pods-binding")
    assert binder["metadata"]["namespace"] == "interference-apps"
    assert binder["rules"] == [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]
    bound = by_kind(manifests, "RoleBinding", "interference-scheduler-pods-binding")
    assert [s["name"] for s in bound["subjects"]] == ["interference-scheduler", "interference-extender"]
    # The second scheduler: a ClusterRole of its own, no system:kube-scheduler, no Lease or binding in it.
    own = by_kind(manifests, "ClusterRole", "interference-scheduler")
    resources = {r for rule in own["rules"] for r in rule["resources"]}
    assert not resources & {"leases", "pods/binding", "bindings", "secrets"}
    assert not [m for m in manifests if m.get("roleRef", {}).get("name") == "system:kube-scheduler"]


def test_the_second_scheduler_gets_the_rules_of_the_plugin_scheduler(
    manifests: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Both run kube-scheduler v1.34, which waits for every informer it starts: a list it may not do (once
    volumeattachments) leaves its caches unsynced, and it schedules no pod at all."""
    plugins = plugins_by_kind(render_manifests(tmp_path, b"scheduler build"), "ClusterRole", "gpu-scheduler")
    assert by_kind(manifests, "ClusterRole", "interference-scheduler")["rules"] == plugins["rules"]


def test_extender_deployment_and_service(manifests: list[dict[str, Any]]) -> None:
    deployment = by_kind(manifests, "Deployment", "interference-extender")
    assert deployment["metadata"]["namespace"] == "kube-system"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert re.fullmatch(r"interference-extender:h-[0-9a-f]{12}", container["image"]), container["image"]
    assert "--in-cluster" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["serviceAccountName"] == "interference-extender"
    service = by_kind(manifests, "Service", "interference-extender")
    assert service["spec"]["ports"][0]["port"] == 8888


def test_second_scheduler_runs_upstream_image_with_the_extender(manifests: list[dict[str, Any]]) -> None:
    deployment = by_kind(manifests, "Deployment", "interference-scheduler")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.k8s.io/kube-scheduler:v1.34.4"
    config = yaml.safe_load(by_kind(manifests, "ConfigMap", "interference-scheduler-config")["data"]["config.yaml"])
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert [p["schedulerName"] for p in config["profiles"]] == ["interference-scheduler"]
    assert config["leaderElection"]["resourceName"] == "interference-scheduler"
    (extender,) = config["extenders"]
    assert extender["urlPrefix"] == "https://interference-extender.kube-system.svc:8888"
    assert extender["enableHTTPS"] is True
    assert extender["tlsConfig"]["certFile"] == "/etc/interference-scheduler-tls/scheduler.crt"
    verbs = {"filterVerb", "prioritizeVerb", "bindVerb"}
    assert verbs | {"weight", "nodeCacheCapable", "httpTimeout", "ignorable"} <= set(extender)
    lease_role = by_kind(manifests, "Role", "interference-scheduler-leader-election")
    assert lease_role["rules"][1]["resourceNames"] == ["interference-scheduler"]



@pytest.mark.parametrize("name", ["interference-extender", "interference-scheduler"])
def test_both_deployments_are_hardened_with_limits(manifests: list[dict[str, Any]], name: str) -> None:
    pod = by_kind(manifests, "Deployment", name)["spec"]["template"]["spec"]
    assert hardening_gaps(pod) == []
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "512Mi"}


def test_the_extender_limits_fit_its_memory_limit(manifests: list[dict[str, Any]]) -> None:
    """The arithmetic of docs/extender.md: what the server's limits may need stays under the container's limit."""
    (container,) = by_kind(manifests, "Deployment", "interference-extender")["spec"]["template"]["spec"]["containers"]
    limits = limits_from(parse_args(container["args"]))
    assert limits == ServerLimits(max_body_bytes=8 * 2**20, body_budget_bytes=8 * 2**20, max_connections=32,
                                  request_timeout=10, idle_timeout=120)
    assert memory_bound_bytes(limits) <= parse_quantity(container["resources"]["limits"]["memory"])


def test_only_the_second_scheduler_may_reach_the_extender(manifests: list[dict[str, Any]]) -> None:
    policy = by_kind(manifests, "NetworkPolicy", "interference-extender")
    extender_pod = by_kind(manifests, "Deployment", "interference-extender")["spec"]["template"]
    scheduler_pod = by_kind(manifests, "Deployment", "interference-scheduler")["spec"]["template"]
    assert policy["metadata"]["namespace"] == "kube-system"
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= extender_pod["metadata"]["labels"].items()
    (rule,) = policy["spec"]["ingress"]
    (source,) = rule["from"]
    assert set(source) == {"podSelector"}  # the policy's own namespace, where the scheduler runs
    assert source["podSelector"]["matchLabels"].items() <= scheduler_pod["metadata"]["labels"].items()
    assert not source["podSelector"]["matchLabels"].items() <= extender_pod["metadata"]["labels"].items()
    assert rule["ports"] == [{"protocol": "TCP", "port": 8888}]
    # The scheduler itself takes no ingress at all (the node's probes are always allowed).
    closed = by_kind(manifests, "NetworkPolicy", "interference-scheduler")
    assert closed["spec"]["podSelector"]["matchLabels"].items() <= scheduler_pod["metadata"]["labels"].items()
    assert (closed["spec"]["policyTypes"], closed["spec"]["ingress"]) == (["Ingress"], [])


def test_with_a_registry_the_extender_runs_the_pushed_digest(tmp_path: Path) -> None:
    """What a push recorded (image_registry_digests) is what the Deployment names; without it, the pushed tag."""
    def extender_image(where: str, **extra: Any) -> str:
        (tmp_path / where).mkdir()
        run = include(tmp_path / where, "manifests", {"scheduler_extender_cluster_version": "v1.34.4",
                                                      "images_registry": "reg.example.com/x", **extra})
        (shown,) = run.results("Show the manifests")
        deployment = by_kind(shown["scheduler_extender_manifests"], "Deployment", "interference-extender")
        image: str = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        return image

    tagged = extender_image("tagged")
    assert re.fullmatch(r"reg\.example\.com/x/interference-extender:h-[0-9a-f]{12}", tagged), tagged
    digest = "reg.example.com/x/interference-extender@sha256:" + "ab" * 32
    assert extender_image("pushed", image_registry_digests={tagged: digest}) == digest
    # A digest of some other image is not taken for this one.
    assert extender_image("other", image_registry_digests={"reg.example.com/x/mbw:h-1": digest}) == tagged

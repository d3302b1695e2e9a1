"""scheduler_plugins: the rendered KubeSchedulerConfiguration and in-cluster manifests.

Rendered by the role's own entry points through ansible-playbook; the
manifests are checked against the Kubernetes 1.34 schemas (kubernetes-validate)
and for what the issue asks: the v1 profile `gpu-scheduler` with the plugins
and weights 10/5/3 (+ InterferenceAware), least-privilege RBAC, leader
election on the scheduler's own Lease. The kind path needs a Docker engine and
an image, absent here; the binary runs for real on kwok in
tests/integration/test_scheduler_plugins_kwok.py. Apps opt in with
`scheduler: plugins`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support.playbook_json import PlaybookRun, run_playbook
from tests.support.pod_security import hardening_gaps

from .test_apps_place import render as render_apps

KUBERNETES_VERSION = "1.34"
PLUGINS = ["GPUScheduler", "SpotScheduler", "AZScheduler", "InterferenceAware"]


def include(tmp_path: Path, entry: str, variables: dict[str, Any], *, check: bool = False) -> PlaybookRun:
    plays = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Run the entry point",
                    "ansible.builtin.include_role": {
                        "name": "interference.orchestrator.scheduler_plugins",
                        "tasks_from": entry,
                    },
                    "vars": variables,
                },
                {"name": "Show the manifests", "ansible.builtin.debug": {"var": "scheduler_plugins_manifests"}},
            ],
        }
    ]
    run = run_playbook(tmp_path, plays, check=check)
    assert run.returncode == 0, run.stderr + str(run.report)
    return run


def render_config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    out = tmp_path / "out"
    include(tmp_path, "scheduler_config", {"scheduler_plugins_local_dir": str(out), **extra})
    config: dict[str, Any] = yaml.safe_load((out / "kube-scheduler-config.yaml").read_text())
    return config


def test_default_profile_has_the_plugins_and_weights(tmp_path: Path) -> None:
    config = render_config(tmp_path, cluster_kubeconfig="/tmp/kwok/kubeconfig.yaml")
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert config["clientConnection"]["kubeconfig"] == "/tmp/kwok/kubeconfig.yaml"
    assert config["leaderElection"] == {"leaderElect": False}
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == "gpu-scheduler"
    assert profile["plugins"] == {
        "multiPoint": {
            "enabled": [
                {"name": "GPUScheduler", "weight": 10},
                {"name": "SpotScheduler", "weight": 5},
                {"name": "AZScheduler", "weight": 3},
                {"name": "InterferenceAware", "weight": 10},
            ]
        }
    }
    args = {entry["name"]: entry["args"] for entry in profile["pluginConfig"]}
    assert args == {
        "GPUScheduler": {
            "resourceName": "nvidia.com/gpu",
            "memoryLabel": "gpu.nvidia.com/memory",
            "avoidGPUNodesForOtherPods": True,
        },
        "SpotScheduler": {"preference": "spot", "optOutAnnotation": "interference.orchestrator/spot"},
        "AZScheduler": {"topologyKey": "topology.kubernetes.io/zone"},
        "InterferenceAware": {
            "profileAnnotation": "interference.orchestrator/profile",
            "typeLabel": "interference.orchestrator/type",
        },
    }


def test_weight_zero_disables_the_score_and_the_gpu_filter_can_be_left_out(tmp_path: Path) -> None:
    config = render_config(
        tmp_path,
        scheduler_plugins_weights={"gpu": 10, "spot": 0, "zone": 3, "interference": 0},
        scheduler_plugins_gpu_filter=False,
        scheduler_plugins_spot_preference="on-demand",
    )
    plugins = config["profiles"][0]["plugins"]
    assert {"name": "SpotScheduler"} in plugins["multiPoint"]["enabled"]
    assert plugins["score"] == {"disabled": [{"name": "SpotScheduler"}, {"name": "InterferenceAware"}]}
    assert plugins["filter"] == {"disabled": [{"name": "GPUScheduler"}]}
    assert plugins["preFilter"] == {"disabled": [{"name": "GPUScheduler"}]}
    spot = next(e for e in config["profiles"][0]["pluginConfig"] if e["name"] == "SpotScheduler")
    assert spot["args"]["preference"] == "on-demand"


def test_sharing_goes_to_interference_aware_args(tmp_path: Path) -> None:
    """scheduler_plugins_sharing (default apps_sharing) is InterferenceAware's `sharing`; unset, no such arg."""
    sharing = {"label": "example.com/host", "pressures": {"memory_bandwidth": 0.6, "llc": 0.5}}

    def interference_args(where: str, **extra: Any) -> dict[str, Any]:
        (tmp_path / where).mkdir()
        config = render_config(tmp_path / where, **extra)
        (args,) = [e["args"] for e in config["profiles"][0]["pluginConfig"] if e["name"] == "InterferenceAware"]
        return args

    plain = {"profileAnnotation": "interference.orchestrator/profile", "typeLabel": "interference.orchestrator/type"}
    assert interference_args("apps", apps_sharing=sharing) == {**plain, "sharing": sharing}
    assert interference_args("own", apps_sharing=sharing, scheduler_plugins_sharing={"label": "host"}) == {
        **plain, "sharing": {"label": "host", "pressures": {}},
    }
    assert interference_args("none", apps_sharing=None) == plain


def test_second_run_changes_nothing_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    include(tmp_path, "scheduler_config", {"scheduler_plugins_local_dir": str(out)})
    second = include(tmp_path, "scheduler_config", {"scheduler_plugins_local_dir": str(out)})
    assert second.stats["changed"] == 0
    fresh = tmp_path / "fresh"
    include(tmp_path, "scheduler_config", {"scheduler_plugins_local_dir": str(fresh)}, check=True)
    assert not fresh.exists()


def render_manifests(tmp_path: Path, binary_content: bytes) -> list[dict[str, Any]]:
    # The image tag is the binary's hash: a stand-in binary keeps this test free of the Go build.
    binary = tmp_path / "gpu-scheduler"
    binary.write_bytes(binary_content)
    binary.chmod(0o755)
    run = include(tmp_path, "manifests", {"scheduler_plugins_binary": str(binary)})
    (shown,) = run.results("Show the manifests")
    objects: list[dict[str, Any]] = shown["scheduler_plugins_manifests"]
    return objects


def image_of(manifests: list[dict[str, Any]]) -> str:
    image: str = by_kind(manifests, "Deployment", "gpu-scheduler")["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


@pytest.fixture(scope="module")
def manifests(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return render_manifests(tmp_path_factory.mktemp("manifests"), b"scheduler build 1")


def test_image_tag_follows_the_binary(manifests: list[dict[str, Any]], tmp_path: Path) -> None:
    assert re.fullmatch(r"interference-gpu-scheduler:h-[0-9a-f]{12}", image_of(manifests)), image_of(manifests)
    (tmp_path / "same").mkdir()
    (tmp_path / "rebuilt").mkdir()
    assert image_of(render_manifests(tmp_path / "same", b"scheduler build 1")) == image_of(manifests)
    assert image_of(render_manifests(tmp_path / "rebuilt", b"scheduler build 2")) != image_of(manifests)


def test_a_missing_binary_says_how_to_build_it(tmp_path: Path) -> None:
    missing = tmp_path / "gpu-scheduler"
    plays = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "name": "Render the manifests",
        "ansible.builtin.include_role": {
            "name": "interference.orchestrator.scheduler_plugins", "tasks_from": "manifests",
        },
        "vars": {"scheduler_plugins_binary": str(missing)},
    }]}]
    run = run_playbook(tmp_path, plays)
    assert run.returncode != 0
    assert f"{missing} is missing: run scripts/build-tools.sh gpu-scheduler" in json.dumps(run.report)


def by_kind(manifests: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def test_manifests_are_valid_kubernetes_objects(manifests: list[dict[str, Any]]) -> None:
    assert [m["kind"] for m in manifests] == [
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "RoleBinding",
        "ConfigMap", "NetworkPolicy", "Deployment", "Namespace", "Role", "RoleBinding",
    ]
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_rbac_is_least_privilege(manifests: list[dict[str, Any]]) -> None:
    role = by_kind(manifests, "ClusterRole", "gpu-scheduler")
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert not any("*" in entry for entry in granted)
    # What binding and leader election need, and nothing cluster-wide on leases or secrets.
    # Bindings only in the apps namespace (a Role there), not cluster-wide.
    assert ("", "pods/binding", "create") not in granted
    binder = by_kind(manifests, "Role", "gpu-scheduler-pods-binding")
    assert binder["metadata"]["namespace"] == "interference-apps"
    assert binder["rules"] == [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]
    assert ("events.k8s.io", "events", "create") in granted
    assert ("storage.k8s.io", "csinodes", "list") in granted
    assert not any(resource in {"leases", "secrets", "configmaps"} for _, resource, _ in granted)
    writes = {"create", "update", "patch", "delete"}
    assert not any(verb in writes and resource == "nodes" for _, resource, verb in granted)
    lease = by_kind(manifests, "Role", "gpu-scheduler-leader-election")
    assert lease["metadata"]["namespace"] == "kube-system"
    named = [rule for rule in lease["rules"] if rule.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["gpu-scheduler"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        }
    ]


def test_deployment_runs_the_plugin_build_with_leader_election(manifests: list[dict[str, Any]]) -> None:
    config = yaml.safe_load(by_kind(manifests, "ConfigMap", "gpu-scheduler-config")["data"]["config.yaml"])
    assert "kubeconfig" not in config["clientConnection"]
    assert config["leaderElection"] == {
        "leaderElect": True, "resourceName": "gpu-scheduler", "resourceNamespace": "kube-system",
    }
    assert [p["name"] for p in config["profiles"][0]["plugins"]["multiPoint"]["enabled"]] == PLUGINS
    deployment = by_kind(manifests, "Deployment", "gpu-scheduler")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "gpu-scheduler"
    (container,) = pod["containers"]
    assert re.fullmatch(r"interference-gpu-scheduler:h-[0-9a-f]{12}", container["image"]), container["image"]
    assert container["command"][:2] == ["/gpu-scheduler", "--config=/etc/kubernetes/gpu-scheduler/config.yaml"]
    checksum = deployment["spec"]["template"]["metadata"]["annotations"]["interference.orchestrator/config-checksum"]
    assert len(checksum) == 40


def test_plugins_apps_get_the_gpu_scheduler_and_no_pinning(tmp_path: Path) -> None:
    apps = [
        {"name": "trainer", "image": "x", "type": "cpu", "scheduler": "plugins"},
        {"name": "web", "image": "x", "type": "memory", "scheduler": "extender"},
        {"name": "pinned", "image": "x", "type": "cpu"},
    ]
    run, out = render_apps(tmp_path, apps)
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    data = json.loads(out.read_text())
    specs = {m["metadata"]["name"]: m["spec"]["template"]["spec"] for m in data["manifests"]}
    assert specs["trainer"]["schedulerName"] == "gpu-scheduler"
    assert "nodeSelector" not in specs["trainer"]
    assert specs["web"]["schedulerName"] == "interference-scheduler"
    assert "schedulerName" not in specs["pinned"]
    # Only the pinned app has nodes in the plan; the other two are left to their schedulers.
    planned = {entry["name"]: (entry["nodes"], entry["scheduler"]) for entry in data["plan"]["apps"]}
    assert planned["trainer"] == ([], "plugins")
    assert planned["web"] == ([], "extender")
    assert planned["pinned"][0] and planned["pinned"][1] is None


def test_deployment_is_hardened_with_limits(manifests: list[dict[str, Any]]) -> None:
    pod = by_kind(manifests, "Deployment", "gpu-scheduler")["spec"]["template"]["spec"]
    assert hardening_gaps(pod) == []
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "512Mi"}


def test_nothing_but_the_node_may_reach_the_scheduler(manifests: list[dict[str, Any]]) -> None:
    policy = by_kind(manifests, "NetworkPolicy", "gpu-scheduler")
    pod = by_kind(manifests, "Deployment", "gpu-scheduler")["spec"]["template"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert (policy["spec"]["policyTypes"], policy["spec"]["ingress"]) == (["Ingress"], [])


def test_with_a_registry_the_scheduler_runs_the_pushed_digest(tmp_path: Path) -> None:
    """What a push recorded (image_registry_digests) is what the Deployment names; without it, the pushed tag."""
    binary = tmp_path / "gpu-scheduler"
    binary.write_bytes(b"scheduler build 1")
    binary.chmod(0o755)

    def scheduler_image(where: str, **extra: Any) -> str:
        (tmp_path / where).mkdir()
        run = include(tmp_path / where, "manifests", {"scheduler_plugins_binary": str(binary),
                                                      "images_registry": "reg.example.com/x", **extra})
        (shown,) = run.results("Show the manifests")
        return image_of(shown["scheduler_plugins_manifests"])

    tagged = scheduler_image("tagged")
    assert re.fullmatch(r"reg\.example\.com/x/interference-gpu-scheduler:h-[0-9a-f]{12}", tagged), tagged
    digest = "reg.example.com/x/interference-gpu-scheduler@sha256:" + "cd" * 32
    assert scheduler_image("pushed", image_registry_digests={tagged: digest}) == digest

"""manifests.py: the Deployments plan_apps builds, as plain data, without Ansible.

The manifests are validated against the Kubernetes 1.34 schema
(kubernetes-validate, strict: unknown fields fail; in-process) and checked
against the labels/annotation contract and the plan. Applying them to a real
control plane is the kwok tests' job (tests/integration/test_apps_role_kwok.py).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import InputError
from ansible_collections.interference.orchestrator.plugins.module_utils.manifests import (
    max_skew,
    merged,
    parse_settings,
    security_context,
)

REPO = Path(__file__).resolve().parents[4]
K8S_VERSION = "1.34.0"
MANAGED_BY = "interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
APP_ITEM = "interference.orchestrator/app"
TYPE_LABEL = "interference.orchestrator/type"
PROFILE = "interference.orchestrator/profile"
CPU_DEMAND_ANNOTATION = "interference.orchestrator/cpu-demand"
HOSTNAME = "kubernetes.io/hostname"
WORKERS = ["cluster-kind-worker", "cluster-kind-worker2", "cluster-kind-worker3"]

NODES = [
    {
        "name": name,
        "labels": {"group": f"node{index}", HOSTNAME: name, **({"disk": "ssd"} if index == 2 else {})},
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110", **({"nvidia.com/gpu": "1"} if index == 3 else {})},
    }
    for index, name in enumerate(WORKERS, start=1)
]

APPS: list[dict[str, Any]] = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "CPU"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
    {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
    {
        "name": "web",
        "image": "registry.local:5000/web:1.0",
        "type": "cpu",
        "replicas": 2,
        "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "command": ["nginx", "-g", "daemon off;"],
        "args": ["--flag: yes"],
        "env": {"ENABLED": "yes", "WORKERS": 4, "QUOTE": 'it\'s "quoted"'},
    },
    {"name": "crowd", "image": "pts/mbw", "type": "memory", "replicas": 5},
    {"name": "tuned", "image": "pts/mbw", "profile": {"llc": 0.5, "disk_io": 1}},
    {"name": "on-ssd", "image": "pts/c-ray", "type": "cpu", "node_selector": {"disk": "ssd"}},
    {"name": "pinned", "image": "pts/c-ray", "type": "memory", "node": "cluster-kind-worker3"},
    {"name": "trainer", "image": "pts/c-ray", "type": "cpu", "gpus": 1},
    {"name": "extended", "image": "pts/c-ray", "type": "cpu", "scheduler": "extender"},
    {"name": "plugged", "image": "pts/mbw", "type": "memory", "scheduler": "Plugins"},
]

IMAGE_REFS = {"pts/c-ray": "pts/c-ray:h-0123456789ab"}
DEFAULTS = yaml.safe_load((REPO / "roles" / "apps" / "defaults" / "main.yml").read_text())
# The settings place.yml passes, from the role defaults (those that are not Jinja).
SETTINGS: dict[str, Any] = {
    "namespace": DEFAULTS["apps_namespace"],
    "command": DEFAULTS["apps_command"],
    "security_context": DEFAULTS["apps_security_context"],
    "automount_service_account_token": DEFAULTS["apps_automount_service_account_token"],
    "scheduler_name": DEFAULTS["apps_scheduler_name"],
    "plugins_scheduler_name": DEFAULTS["apps_plugins_scheduler_name"],
    "image_refs": IMAGE_REFS,
}


def build(apps: list[Any], nodes: list[Any] | None = None, **settings: Any) -> dict[str, Any]:
    """plan_apps with the role's settings: {manifests by name, order, placed (pinned apps' nodes), plan}."""
    plan = plan_apps(apps, NODES if nodes is None else nodes, deployment={**SETTINGS, **settings})
    for manifest in plan["manifests"]:
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    return {
        "manifests": {m["metadata"]["name"]: m for m in plan["manifests"]},
        "order": [m["metadata"]["name"] for m in plan["manifests"]],
        "placed": {entry["name"]: entry["nodes"] for entry in plan["apps"] if not entry["extender"]},
        "plan": plan,
    }


@pytest.fixture(scope="module")
def rendered() -> dict[str, Any]:
    return build(APPS)


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["template"]["spec"]


def test_the_schema_check_catches_a_bad_deployment(rendered: dict[str, Any]) -> None:
    """kubernetes-validate really checks: a misspelt field and a wrong type are refused."""
    manifest = json.loads(json.dumps(rendered["manifests"]["c-ray"]))
    pod_spec(manifest)["nodeSelektor"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    manifest = json.loads(json.dumps(rendered["manifests"]["c-ray"]))
    manifest["spec"]["replicas"] = "1"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


def test_one_deployment_per_app_in_the_order_of_the_plan(rendered: dict[str, Any]) -> None:
    assert rendered["order"] == [app["name"] for app in APPS]
    assert rendered["order"] == [entry["name"] for entry in rendered["plan"]["apps"]]
    for manifest in rendered["manifests"].values():
        assert manifest["kind"] == "Deployment"
        assert manifest["apiVersion"] == "apps/v1"
        assert manifest["metadata"]["namespace"] == "interference-apps"


def test_without_settings_there_are_no_manifests() -> None:
    assert "manifests" not in plan_apps(APPS[:1], NODES)


def test_labels_follow_the_contract_on_deployment_and_pods(rendered: dict[str, Any]) -> None:
    expected_types = {"c-ray": "cpu", "compress-7zip": "cpu", "mbw": "memory", "tuned": "custom", "pinned": "memory"}
    for name, manifest in rendered["manifests"].items():
        labels = manifest["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == name
        assert labels["app.kubernetes.io/managed-by"] == MANAGED_BY
        assert manifest["spec"]["template"]["metadata"]["labels"] == labels
        selector = manifest["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items()
        if name in expected_types:
            assert labels[TYPE_LABEL] == expected_types[name]


def test_only_the_pods_of_an_app_that_declares_a_cpu_demand_carry_it() -> None:
    """The demand time-sharing counts reaches the online schedulers; an app without one keeps its pod template."""
    apps = [{**APPS[0], "cpu_demand": "1500m"}, {**APPS[4], "cpu_demand": 2}, APPS[2]]
    manifests = build(apps)["manifests"]
    demands = {
        name: manifest["spec"]["template"]["metadata"]["annotations"].get(CPU_DEMAND_ANNOTATION)
        for name, manifest in manifests.items()
    }
    assert demands == {"c-ray": "1500m", "web": "2000m", "mbw": None}
    assert manifests["mbw"]["spec"]["template"]["metadata"]["annotations"].keys() == {PROFILE}


def test_every_pod_carries_its_profile_annotation_typed_or_not(rendered: dict[str, Any]) -> None:
    """The one key the schedulers read: the same JSON shape for `type` apps and profile-only apps."""
    expected = {
        "c-ray": {"cpu": 1.0},
        "compress-7zip": {"cpu": 1.0},
        "mbw": {"memory_bandwidth": 1.0},
        "tuned": {"llc": 0.5, "disk_io": 1.0},
        "pinned": {"memory_bandwidth": 1.0},
        "extended": {"cpu": 1.0},
    }
    for name, manifest in rendered["manifests"].items():
        profile = json.loads(manifest["spec"]["template"]["metadata"]["annotations"][PROFILE])
        if name in expected:
            assert profile == expected[name], name
        assert profile, f"{name}: empty profile"


def test_annotation_holds_the_plan_one_node_per_replica(rendered: dict[str, Any]) -> None:
    for name, nodes in rendered["placed"].items():
        manifest = rendered["manifests"][name]
        assert manifest["metadata"]["annotations"][PLANNED] == ",".join(nodes)
        assert len(nodes) == manifest["spec"]["replicas"]


def test_the_plan_separates_same_type_apps(rendered: dict[str, Any]) -> None:
    placed = rendered["placed"]
    assert placed["c-ray"] != placed["compress-7zip"]
    assert placed["mbw"] != placed["stressapptest"]
    assert placed["on-ssd"] == ["cluster-kind-worker2"]
    assert placed["pinned"] == ["cluster-kind-worker3"]
    assert placed["trainer"] == ["cluster-kind-worker3"]


def test_single_node_apps_are_pinned_by_hostname_and_recreated(rendered: dict[str, Any]) -> None:
    for name in ("c-ray", "mbw", "pinned", "trainer"):
        manifest = rendered["manifests"][name]
        spec = pod_spec(manifest)
        assert spec["nodeSelector"] == {HOSTNAME: rendered["placed"][name][0]}
        assert "affinity" not in spec
        assert "topologySpreadConstraints" not in spec
        assert manifest["spec"]["strategy"] == {"type": "Recreate"}
    on_ssd = pod_spec(rendered["manifests"]["on-ssd"])
    assert on_ssd["nodeSelector"] == {"disk": "ssd", HOSTNAME: "cluster-kind-worker2"}


def test_a_rebalance_moves_by_a_rolling_update_that_never_lacks_a_running_replica() -> None:
    apps = [{"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
            {"name": "web", "image": "nginx", "type": "cpu", "replicas": 2},
            {"name": "left", "image": "nginx", "type": "cpu", "scheduler": "extender"}]
    rolling = build(apps, strategy="RollingUpdate")["manifests"]
    for name in ("c-ray", "web"):
        assert rolling[name]["spec"]["strategy"] == {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    # Apps left to a scheduler keep the Deployment default; the builder's own table is not changed.
    assert "strategy" not in rolling["left"]["spec"]
    rolling["c-ray"]["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = 9
    assert build(apps, strategy="RollingUpdate")["manifests"]["c-ray"]["spec"]["strategy"]["rollingUpdate"] == {
        "maxSurge": 1, "maxUnavailable": 0}
    assert build(apps)["manifests"]["c-ray"]["spec"]["strategy"] == {"type": "Recreate"}


def test_replicas_on_distinct_nodes_get_affinity_and_a_strict_spread(rendered: dict[str, Any]) -> None:
    planned = rendered["placed"]["web"]
    assert len(set(planned)) == 2
    spec = pod_spec(rendered["manifests"]["web"])
    assert "nodeSelector" not in spec
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": sorted(planned)}]}]
    assert spec["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "web"}},
            "matchLabelKeys": ["pod-template-hash"],
        }
    ]


def test_more_replicas_than_nodes_allow_the_plans_own_skew(rendered: dict[str, Any]) -> None:
    planned = rendered["placed"]["crowd"]
    counts = Counter(planned)
    assert len(planned) == 5
    assert set(counts) == set(WORKERS)
    [spread] = pod_spec(rendered["manifests"]["crowd"])["topologySpreadConstraints"]
    assert spread["maxSkew"] == max(1, max(counts.values()) - min(counts.values()))


def test_uneven_plan_sets_max_skew_to_its_own_skew() -> None:
    """A node with room for one replica: the plan is 3/3/1 and the spread must allow a skew of 2."""
    nodes = [
        {"name": name, "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
        for name, cpu in zip(WORKERS, ("8", "8", "1"), strict=True)
    ]
    app = {"name": "packed", "image": "x", "type": "cpu", "replicas": 7, "resources": {"requests": {"cpu": "1"}}}
    result = build([app], nodes)
    assert sorted(Counter(result["placed"]["packed"]).values()) == [1, 3, 3]
    [spread] = pod_spec(result["manifests"]["packed"])["topologySpreadConstraints"]
    assert spread["maxSkew"] == 2


@pytest.mark.parametrize(
    ("nodes", "skew"),
    [(["a", "b"], 1), (["a", "a", "b"], 1), (["a", "a", "a", "b"], 2), (["a", "b", "c", "c", "c", "c"], 3)],
)
def test_max_skew_is_most_minus_fewest_and_at_least_one(nodes: list[str], skew: int) -> None:
    assert max_skew(nodes) == skew


def test_apps_left_to_a_scheduler_get_its_name_and_no_pinning(rendered: dict[str, Any]) -> None:
    for name, scheduler in (("extended", "interference-scheduler"), ("plugged", "gpu-scheduler")):
        manifest = rendered["manifests"][name]
        spec = pod_spec(manifest)
        assert spec["schedulerName"] == scheduler
        for key in ("nodeSelector", "affinity", "topologySpreadConstraints"):
            assert key not in spec
        assert "strategy" not in manifest["spec"]
        assert PLANNED not in manifest["metadata"]["annotations"]
        assert name not in rendered["placed"]
    for name in rendered["placed"]:
        assert "schedulerName" not in pod_spec(rendered["manifests"][name])
    renamed = build([APPS[-2], APPS[-1]], scheduler_name="mine", plugins_scheduler_name="theirs")
    assert pod_spec(renamed["manifests"]["extended"])["schedulerName"] == "mine"
    assert pod_spec(renamed["manifests"]["plugged"])["schedulerName"] == "theirs"


def test_containers_stay_alive_and_use_loaded_images(rendered: dict[str, Any]) -> None:
    for name, manifest in rendered["manifests"].items():
        [container] = pod_spec(manifest)["containers"]
        assert container["name"] == name
        assert container["imagePullPolicy"] == "IfNotPresent"
        if name != "web":
            assert container["command"] == DEFAULTS["apps_command"]
            assert container["command"][:2] == ["/bin/sh", "-c"]
            assert "sleep" in container["command"][2]
            assert "TERM" in container["command"][2]
    images = {name: pod_spec(m)["containers"][0]["image"] for name, m in rendered["manifests"].items()}
    assert images["c-ray"] == "pts/c-ray:h-0123456789ab"
    assert images["mbw"] == "pts/mbw"
    assert images["web"] == "registry.local:5000/web:1.0"


def test_an_empty_command_takes_the_roles_and_empty_args_and_env_are_left_out() -> None:
    app = {"name": "bare", "image": "x", "type": "cpu", "command": [], "args": [], "env": {}}
    [container] = pod_spec(build([app], command=["sleep", "9"])["manifests"]["bare"])["containers"]
    assert container["command"] == ["sleep", "9"]
    assert "args" not in container
    assert "env" not in container


def test_user_strings_survive_and_env_is_sorted_by_name(rendered: dict[str, Any]) -> None:
    [container] = pod_spec(rendered["manifests"]["web"])["containers"]
    assert container["command"] == ["nginx", "-g", "daemon off;"]
    assert container["args"] == ["--flag: yes"]
    assert container["env"] == [
        {"name": "ENABLED", "value": "yes"},
        {"name": "QUOTE", "value": 'it\'s "quoted"'},
        {"name": "WORKERS", "value": "4"},
    ]


def test_resources_requests_limits_and_gpus(rendered: dict[str, Any]) -> None:
    web = pod_spec(rendered["manifests"]["web"])["containers"][0]["resources"]
    assert web == {"requests": {"cpu": "500m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
    trainer = pod_spec(rendered["manifests"]["trainer"])["containers"][0]["resources"]
    assert trainer == {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}
    assert "resources" not in pod_spec(rendered["manifests"]["c-ray"])["containers"][0]


def test_every_container_is_hardened_by_default_and_gets_no_service_account_token(rendered: dict[str, Any]) -> None:
    assert DEFAULTS["apps_security_context"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": False,
    }
    for name, manifest in rendered["manifests"].items():
        spec = pod_spec(manifest)
        assert spec["automountServiceAccountToken"] is False, name
        [container] = spec["containers"]
        assert container["securityContext"] == DEFAULTS["apps_security_context"], name


def test_an_apps_security_context_is_merged_over_the_default() -> None:
    """Nested keys merge (an added capability keeps drop ALL), null leaves a default out, other apps keep it."""
    relaxed = {
        "name": "relaxed",
        "image": "pts/c-ray",
        "type": "cpu",
        "security_context": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "capabilities": {"add": ["SYS_NICE"]},
            "seccompProfile": None,
        },
    }
    manifests = build([relaxed, APPS[2]])["manifests"]
    [container] = pod_spec(manifests["relaxed"])["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_NICE"]},
        "runAsNonRoot": True,
        "runAsUser": 65532,
    }
    [other] = pod_spec(manifests["mbw"])["containers"]
    assert other["securityContext"] == DEFAULTS["apps_security_context"]


def test_merge_replaces_lists_and_leaves_its_inputs_alone() -> None:
    base = {"capabilities": {"drop": ["ALL"]}, "privileged": False}
    own = {"capabilities": {"drop": ["NET_RAW"]}, "privileged": None}
    assert security_context(base, own) == {"capabilities": {"drop": ["NET_RAW"]}}
    assert merged(base, {}) == base
    assert base == {"capabilities": {"drop": ["ALL"]}, "privileged": False}


def test_the_role_default_can_be_replaced_and_a_token_mounted() -> None:
    result = build(APPS[:1], security_context={"runAsNonRoot": True, "runAsUser": 1000},
                   automount_service_account_token=True)
    spec = pod_spec(result["manifests"]["c-ray"])
    assert spec["automountServiceAccountToken"] is True
    assert spec["containers"][0]["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000}


def test_app_annotation_gives_back_the_app_item(rendered: dict[str, Any]) -> None:
    """The item as written, its enumerations in lower case (`type: CPU` is stored as `cpu`)."""
    for app in APPS:
        stored = json.loads(rendered["manifests"][app["name"]]["metadata"]["annotations"][APP_ITEM])
        lowered: dict[str, Any] = {key: app[key].lower() for key in ("type", "scheduler") if key in app}
        assert stored == {**app, **lowered}


def test_deployment_annotations_are_those_plan_apps_sized(rendered: dict[str, Any]) -> None:
    """plan_apps bounds the annotations it returns; the Deployment carries exactly those."""
    for entry in rendered["plan"]["apps"]:
        assert rendered["manifests"][entry["name"]]["metadata"]["annotations"] == entry["annotations"]


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"namespace": "Bad_NS"}, "deployment.namespace"),
        ({"namespace": None}, "deployment.namespace"),
        ({"command": "sleep"}, "deployment.command"),
        ({"command": []}, "deployment.command"),
        ({"security_context": ["x"]}, "deployment.security_context"),
        ({"image_refs": {"pts/c-ray": 3}}, "deployment.image_refs.pts/c-ray"),
        ({"scheduler_name": "Not A Name"}, "deployment.scheduler_name"),
        ({"automount_service_account_token": "maybe"}, "deployment.automount_service_account_token"),
        ({"namepsace": "x"}, "deployment.namepsace"),
        ({"strategy": "BlueGreen"}, "deployment.strategy"),
        ({"strategy": ["Recreate"]}, "deployment.strategy"),
    ],
)
def test_bad_settings_name_the_setting(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as failure:
        parse_settings({**SETTINGS, **settings})
    assert f"field '{field}'" in str(failure.value)

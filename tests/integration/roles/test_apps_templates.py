"""apps: the placement step and the Deployment template, through ansible-playbook.

The role's own task files (place.yml, render.yml) run in a real
ansible-playbook with fixture nodes instead of a cluster; the Deployments they
render are validated against the Kubernetes 1.34 schema (kubernetes-validate,
strict: unknown fields fail) and checked against the labels/annotation
contract and the plan. Applying them to a real control plane is the molecule
`default` scenario's job.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps

from tests.support.playbook_json import REPO, PlaybookRun, run_playbook

K8S_VERSION = "1.34.0"
MANAGED_BY = "interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
APP_ITEM = "interference.orchestrator/app"
TYPE_LABEL = "interference.orchestrator/type"
PROFILE = "interference.orchestrator/profile"
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
]

IMAGE_REFS = {"pts/c-ray": "pts/c-ray:h-0123456789ab"}
DEFAULTS = yaml.safe_load((REPO / "roles" / "apps" / "defaults" / "main.yml").read_text())


def render_plays(out: Path) -> list[dict[str, Any]]:
    """A play running the role's place and render steps on fixture nodes, writing the manifests to `out`."""
    return [
        {
            "name": "Render the apps' Deployments without a cluster",
            "hosts": "localhost",
            "gather_facts": False,
            "vars": {
                # What read_cluster.yml collects from the cluster.
                "apps_nodes": NODES,
                "apps_previous": {},
                "apps_unlisted": [],
                "apps_image_refs": IMAGE_REFS,
            },
            "tasks": [
                {
                    "name": "Place",
                    "ansible.builtin.include_role": {
                        "name": "interference.orchestrator.apps",
                        "tasks_from": "place.yml",
                    },
                },
                {
                    "name": "Render",
                    "ansible.builtin.include_role": {
                        "name": "interference.orchestrator.apps",
                        "tasks_from": "render.yml",
                    },
                },
                {
                    "name": "Write the manifests",
                    "ansible.builtin.copy": {
                        "content": "{{ {'manifests': apps_manifests, 'plan': apps_plan} | to_json }}",
                        "dest": str(out),
                        "mode": "0600",
                    },
                },
            ],
        }
    ]


def render(tmp_path: Path, apps: list[Any]) -> tuple[PlaybookRun, Path]:
    out = tmp_path / "rendered.json"
    return run_playbook(tmp_path, render_plays(out), {"apps": apps}), out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp_path = tmp_path_factory.mktemp("apps")
    run, out = render(tmp_path, APPS)
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    data = json.loads(out.read_text())
    return {
        "manifests": {m["metadata"]["name"]: m for m in data["manifests"]},
        "order": [m["metadata"]["name"] for m in data["manifests"]],
        "placed": placed(data),
        "plan": data["plan"],
    }


def placed(data: dict[str, Any]) -> dict[str, list[str]]:
    """Planned nodes of the pinned apps, by app name."""
    return {entry["name"]: entry["nodes"] for entry in data["plan"]["apps"] if not entry["extender"]}


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["spec"]["template"]["spec"]


def test_every_deployment_is_valid_for_kubernetes_1_34(rendered: dict[str, Any]) -> None:
    for manifest in rendered["manifests"].values():
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


def test_one_deployment_per_app_pinned_ones_first(rendered: dict[str, Any]) -> None:
    names = [app["name"] for app in APPS]
    assert sorted(rendered["order"]) == sorted(names)
    assert rendered["order"][-1] == "extended"
    for manifest in rendered["manifests"].values():
        assert manifest["kind"] == "Deployment"
        assert manifest["apiVersion"] == "apps/v1"
        assert manifest["metadata"]["namespace"] == "interference-apps"


def test_labels_follow_the_contract_on_deployment_and_pods(rendered: dict[str, Any]) -> None:
    expected_types = {
        "c-ray": "cpu",
        "compress-7zip": "cpu",
        "mbw": "memory",
        "tuned": "custom",
        "pinned": "memory",
    }
    for name, manifest in rendered["manifests"].items():
        labels = manifest["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == name
        assert labels["app.kubernetes.io/managed-by"] == MANAGED_BY
        # The owner label prune selects by: on the Deployment only (the pods keep their labels).
        assert labels.pop("interference.orchestrator/apps-owner") == "default"
        assert manifest["spec"]["template"]["metadata"]["labels"] == labels
        selector = manifest["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items()
        if name in expected_types:
            assert labels[TYPE_LABEL] == expected_types[name]


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
        annotations = manifest["spec"]["template"]["metadata"]["annotations"]
        profile = json.loads(annotations[PROFILE])
        if name in expected:
            assert profile == expected[name], name
        assert profile, f"{name}: empty profile"
    assert rendered["manifests"]["tuned"]["metadata"]["labels"][TYPE_LABEL] == "custom"


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


def test_single_node_apps_are_pinned_by_hostname(rendered: dict[str, Any]) -> None:
    for name in ("c-ray", "mbw", "pinned", "trainer"):
        spec = pod_spec(rendered["manifests"][name])
        assert spec["nodeSelector"] == {HOSTNAME: rendered["placed"][name][0]}
        assert "affinity" not in spec
        assert "topologySpreadConstraints" not in spec
    on_ssd = pod_spec(rendered["manifests"]["on-ssd"])
    assert on_ssd["nodeSelector"] == {"disk": "ssd", HOSTNAME: "cluster-kind-worker2"}


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
    spec = pod_spec(rendered["manifests"]["crowd"])
    [spread] = spec["topologySpreadConstraints"]
    assert spread["maxSkew"] == max(1, max(counts.values()) - min(counts.values()))


def test_uneven_plan_sets_max_skew_to_its_own_skew(tmp_path: Path) -> None:
    """A node with room for one replica: the plan is 3/3/1 and the spread must allow a skew of 2."""
    out = tmp_path / "rendered.json"
    plays = render_plays(out)
    plays[0]["vars"]["apps_nodes"] = [
        {"name": name, "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
        for name, cpu in zip(WORKERS, ("8", "8", "1"), strict=True)
    ]
    app = {"name": "packed", "image": "x", "type": "cpu", "replicas": 7, "resources": {"requests": {"cpu": "1"}}}
    run = run_playbook(tmp_path, plays, {"apps": [app]})
    assert run.returncode == 0, json.dumps(run.report)[-3000:]
    data = json.loads(out.read_text())
    counts = Counter(placed(data)["packed"])
    assert sorted(counts.values()) == [1, 3, 3]
    [manifest] = data["manifests"]
    kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    [spread] = pod_spec(manifest)["topologySpreadConstraints"]
    assert spread["maxSkew"] == 2


def test_extender_apps_get_the_scheduler_and_no_pinning(rendered: dict[str, Any]) -> None:
    manifest = rendered["manifests"]["extended"]
    spec = pod_spec(manifest)
    assert spec["schedulerName"] == "interference-scheduler"
    assert "nodeSelector" not in spec
    assert "affinity" not in spec
    assert "topologySpreadConstraints" not in spec
    assert PLANNED not in manifest["metadata"]["annotations"]
    assert "extended" not in rendered["placed"]
    for name in rendered["placed"]:
        assert "schedulerName" not in pod_spec(rendered["manifests"][name])


def test_containers_stay_alive_and_use_loaded_images(rendered: dict[str, Any]) -> None:
    for name, manifest in rendered["manifests"].items():
        [container] = pod_spec(manifest)["containers"]
        assert container["name"] == name
        assert container["imagePullPolicy"] == "IfNotPresent"
        if name != "web":
            assert container["command"][:2] == ["/bin/sh", "-c"]
            assert "sleep" in container["command"][2]
            assert "TERM" in container["command"][2]
    images = {name: pod_spec(m)["containers"][0]["image"] for name, m in rendered["manifests"].items()}
    assert images["c-ray"] == "pts/c-ray:h-0123456789ab"
    assert images["mbw"] == "pts/mbw"
    assert images["web"] == "registry.local:5000/web:1.0"


def test_user_strings_survive_yaml_quoting(rendered: dict[str, Any]) -> None:
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


def test_an_apps_security_context_is_merged_over_the_default(tmp_path: Path) -> None:
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
    run, out = render(tmp_path, [relaxed, APPS[2]])
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    manifests = {m["metadata"]["name"]: m for m in json.loads(out.read_text())["manifests"]}
    [container] = pod_spec(manifests["relaxed"])["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["SYS_NICE"]},
        "runAsNonRoot": True,
        "runAsUser": 65532,
    }
    [other] = pod_spec(manifests["mbw"])["containers"]
    assert other["securityContext"] == DEFAULTS["apps_security_context"]
    for manifest in manifests.values():
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)


def test_the_role_default_can_be_replaced_and_a_token_mounted(tmp_path: Path) -> None:
    out = tmp_path / "rendered.json"
    variables = {
        "apps": [APPS[0]],
        "apps_security_context": {"runAsNonRoot": True, "runAsUser": 1000},
        "apps_automount_service_account_token": True,
    }
    run = run_playbook(tmp_path, render_plays(out), variables)
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    [manifest] = json.loads(out.read_text())["manifests"]
    assert pod_spec(manifest)["automountServiceAccountToken"] is True
    assert pod_spec(manifest)["containers"][0]["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000}


def test_app_annotation_gives_back_the_app_item(rendered: dict[str, Any]) -> None:
    """The item as written, its enumerations in lower case (`type: CPU` is stored as `cpu`)."""
    for app in APPS:
        stored = json.loads(rendered["manifests"][app["name"]]["metadata"]["annotations"][APP_ITEM])
        assert stored == {**app, **({"type": app["type"].lower()} if "type" in app else {})}


def test_deployment_annotations_are_those_plan_apps_sized(rendered: dict[str, Any]) -> None:
    """plan_apps bounds the annotations it returns; the template must write exactly those."""
    for entry in rendered["plan"]["apps"]:
        written = rendered["manifests"][entry["name"]]["metadata"]["annotations"]
        assert {key: written[key] for key in (PLANNED, APP_ITEM) if key in written} == entry["annotations"]


BAD_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"name": "bad", "image": "x", "type": "gpu"}, "apps[1] (bad): field 'type': unknown type 'gpu'"),
    ({"name": "no-image", "type": "cpu"}, "apps[1] (no-image): field 'image': missing"),
    ({"name": "Bad_Name", "image": "x", "type": "cpu"}, "apps[1] (Bad_Name): field 'name'"),
    ({"name": "zero", "image": "x", "type": "cpu", "replicas": 0}, "apps[1] (zero): field 'replicas'"),
    (
        {"name": "huge", "image": "x", "type": "cpu", "resources": {"requests": {"cpu": "lots"}}},
        "apps[1] (huge): field 'resources.requests.cpu'",
    ),
]


@pytest.mark.parametrize(("bad", "message"), BAD_INPUT, ids=[case[0]["name"] for case in BAD_INPUT])
def test_bad_app_message_names_app_and_field(bad: dict[str, Any], message: str) -> None:
    """The message place.yml fails with: the filter's own (one playbook run below shows it reaches the user)."""
    with pytest.raises(AnsibleFilterError) as failure:
        plan_apps([APPS[0], bad], NODES)
    assert message in str(failure.value)


def test_bad_app_fails_at_placement_before_anything_is_rendered(tmp_path: Path) -> None:
    bad, message = BAD_INPUT[0]
    run, out = render(tmp_path, [APPS[0], bad])
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    assert "Traceback" not in output
    [failed] = [r for r in run.results("Plan the apps on the workers") if r.get("failed")]
    assert message in failed["msg"]
    assert not out.exists(), "nothing may be rendered after a placement error"


def test_apps_that_is_not_a_list_fails_at_role_entry(tmp_path: Path) -> None:
    plays = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "roles": [{"role": "interference.orchestrator.apps", "cluster_kubeconfig": str(tmp_path / "none")}],
        }
    ]
    run = run_playbook(tmp_path, plays, {"apps": {"name": "c-ray"}})
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    assert "argument 'apps'" in output
    assert "Traceback" not in output
    assert not run.results("Read the labelled worker nodes"), "the role must stop before talking to a cluster"


def test_a_misspelt_security_context_key_fails_at_role_entry(tmp_path: Path) -> None:
    plays = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "roles": [{"role": "interference.orchestrator.apps", "cluster_kubeconfig": str(tmp_path / "none")}],
        }
    ]
    run = run_playbook(tmp_path, plays, {"apps": APPS[:1], "apps_security_context": {"runAsNonroot": True}})
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    assert "runAsNonroot" in output
    assert "Traceback" not in output
    assert not run.results("Read the labelled worker nodes"), "the role must stop before talking to a cluster"


def test_running_replicas_stay_unless_rebalance(tmp_path: Path) -> None:
    """apps_previous (read back from the planned-nodes annotations) reaches the engine, and apps_rebalance drops it."""
    out = tmp_path / "rendered.json"
    plays = render_plays(out)
    plays[0]["vars"]["apps_previous"] = {"c-ray": ["cluster-kind-worker3"], "mbw": ["cluster-kind-worker3"]}
    seed = APPS[:4]
    kept = run_playbook(tmp_path, plays, {"apps": seed})
    assert kept.returncode == 0, json.dumps(kept.report)[-3000:]
    nodes = placed(json.loads(out.read_text()))
    assert nodes["c-ray"] == nodes["mbw"] == ["cluster-kind-worker3"]

    afresh = run_playbook(tmp_path, plays, {"apps": seed, "apps_rebalance": True})
    assert afresh.returncode == 0, json.dumps(afresh.report)[-3000:]
    assert placed(json.loads(out.read_text()))["c-ray"] == ["cluster-kind-worker"]


def test_strict_fails_when_interference_is_unavoidable(tmp_path: Path) -> None:
    crowded = [{"name": name, "image": "x", "type": "cpu"} for name in ("a", "b", "c", "d")]
    run, out = render(tmp_path, crowded)
    assert run.returncode == 0, json.dumps(run.report)[-3000:]
    assert "zero interference is impossible" in json.dumps(run.report) + run.stderr
    out.unlink()
    strict = run_playbook(tmp_path, render_plays(out), {"apps": crowded, "apps_strict": True})
    output = json.dumps(strict.report) + strict.stderr
    assert strict.returncode != 0
    assert "strict placement: zero interference is impossible" in output
    assert "Traceback" not in output
    assert not out.exists()


def test_apps_with_profile_from_measured_are_placed_and_annotated_with_the_measured_profile(tmp_path: Path) -> None:
    """The role applies apps_measured_profiles before planning: pods carry the measured pressure, not the type's."""
    apps = [
        {"name": "a", "image": "pts/c-ray", "type": "cpu", "profile_from": "measured"},
        {"name": "b", "image": "pts/mbw", "type": "memory"},
    ]
    out = tmp_path / "rendered.json"
    run = run_playbook(tmp_path, render_plays(out), {"apps": apps, "apps_measured_profiles": {"a": {"llc": 0.5}}})
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    data = json.loads(out.read_text())
    annotations = {
        m["metadata"]["name"]: m["spec"]["template"]["metadata"]["annotations"]["interference.orchestrator/profile"]
        for m in data["manifests"]
    }
    assert json.loads(annotations["a"]) == {"llc": 0.5}
    assert json.loads(annotations["b"]) == {"memory_bandwidth": 1.0}

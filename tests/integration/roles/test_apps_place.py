"""apps: the placement step (place.yml) through ansible-playbook, on fixture nodes instead of a cluster.

What reaches the role from its variables: the settings the Deployments are
built with, apps_previous and apps_rebalance, apps_strict and
apps_measured_profiles, and where bad input stops the role. The Deployments
themselves are plain data built by plugins/module_utils/manifests.py and are
unit-tested in tests/unit/plugins/module_utils/test_manifests.py; applying
them to a real control plane is tests/integration/test_apps_role_kwok.py's job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps

from tests.support.playbook_json import PlaybookRun, run_playbook

K8S_VERSION = "1.34.0"
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


def render_plays(out: Path) -> list[dict[str, Any]]:
    """A play running the role's place step on fixture nodes, writing the manifests and the plan to `out`."""
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


def render(tmp_path: Path, apps: list[Any], variables: dict[str, Any] | None = None) -> tuple[PlaybookRun, Path]:
    out = tmp_path / "rendered.json"
    return run_playbook(tmp_path, render_plays(out), {"apps": apps, **(variables or {})}), out


def placed(data: dict[str, Any]) -> dict[str, list[str]]:
    """Planned nodes of the pinned apps, by app name."""
    return {entry["name"]: entry["nodes"] for entry in data["plan"]["apps"] if not entry["extender"]}


def test_place_passes_the_role_settings_and_the_role_applies_what_plan_apps_built(tmp_path: Path) -> None:
    """apps_manifests is the plan's own list, built with the role's variables (manifests.py is unit-tested)."""
    variables = {
        "apps": APPS,
        "apps_namespace": "elsewhere",
        "apps_command": ["sleep", "infinity"],
        "apps_security_context": {"runAsNonRoot": True, "runAsUser": 1000},
        "apps_automount_service_account_token": "yes",
        "apps_scheduler_name": "my-scheduler",
        "apps_plugins_scheduler_name": "my-plugins",
        "apps_instance": "lab-a",
    }
    run, out = render(tmp_path, APPS, variables)
    assert run.returncode == 0, json.dumps(run.report)[-3000:] + run.stderr
    data = json.loads(out.read_text())
    expected = plan_apps(APPS, NODES, deployment={
        "namespace": "elsewhere",
        "command": ["sleep", "infinity"],
        "security_context": {"runAsNonRoot": True, "runAsUser": 1000},
        "automount_service_account_token": True,
        "scheduler_name": "my-scheduler",
        "plugins_scheduler_name": "my-plugins",
        "image_refs": IMAGE_REFS,
        "owner": "lab-a",
    })
    assert data["manifests"] == expected["manifests"]
    # The owner label prune selects by: on each Deployment, not on its pods.
    for manifest in data["manifests"]:
        assert manifest["metadata"]["labels"]["interference.orchestrator/apps-owner"] == "lab-a"
        assert "interference.orchestrator/apps-owner" not in manifest["spec"]["template"]["metadata"]["labels"]
    assert data["manifests"] == data["plan"]["manifests"]
    for manifest in data["manifests"]:
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    by_name = {m["metadata"]["name"]: m for m in data["manifests"]}
    assert by_name["c-ray"]["spec"]["template"]["spec"]["containers"][0]["image"] == "pts/c-ray:h-0123456789ab"
    assert by_name["extended"]["spec"]["template"]["spec"]["schedulerName"] == "my-scheduler"


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


def test_bad_app_fails_at_placement_before_anything_is_built(tmp_path: Path) -> None:
    bad, message = BAD_INPUT[0]
    run, out = render(tmp_path, [APPS[0], bad])
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    assert "Traceback" not in output
    [failed] = [r for r in run.results("Plan the apps on the workers") if r.get("failed")]
    assert message in failed["msg"]
    assert not out.exists(), "nothing may be built after a placement error"


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


def test_apps_sharing_reaches_the_engine_and_a_bad_one_names_its_field(tmp_path: Path) -> None:
    """Workers 1 and 2 on one host that shares memory bandwidth fully: the second memory app goes to worker 3."""
    out = tmp_path / "rendered.json"
    plays = render_plays(out)
    nodes: list[dict[str, Any]] = json.loads(json.dumps(NODES))
    for node in nodes[:2]:
        node["labels"]["example.com/host"] = "h1"
    plays[0]["vars"]["apps_nodes"] = nodes
    memory = [{"name": "mbw", "image": "pts/mbw", "type": "memory"},
              {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"}]
    blind = run_playbook(tmp_path, plays, {"apps": memory})
    assert blind.returncode == 0, json.dumps(blind.report)[-3000:]
    assert sorted(n for nodes in placed(json.loads(out.read_text())).values() for n in nodes) == WORKERS[:2]

    sharing = {"label": "example.com/host", "pressures": {"memory_bandwidth": 1}}
    shared = run_playbook(tmp_path, plays, {"apps": memory, "apps_sharing": sharing})
    assert shared.returncode == 0, json.dumps(shared.report)[-3000:]
    data = json.loads(out.read_text())
    assert "cluster-kind-worker3" in [n for nodes in placed(data).values() for n in nodes]
    assert data["plan"]["report"]["cross_node_interference"] == 0
    assert data["plan"]["report"]["sharing"] == {"label": "example.com/host", "pressures": {"memory_bandwidth": 1.0}}

    out.unlink()
    bad = run_playbook(tmp_path, plays, {"apps": memory, "apps_sharing": {**sharing, "pressures": {"cache": 1}}})
    output = json.dumps(bad.report) + bad.stderr
    assert bad.returncode != 0
    assert "field 'sharing.pressures.cache': unknown resource 'cache'" in output
    assert "Traceback" not in output
    assert not out.exists()

"""With `images_registry` set, every image built here is run from the registry: the references each role renders.

One ansible-playbook run renders what each role would apply, without a
cluster or a Docker engine: the workload images apps run (pts_images tags),
the extender's and the plugin scheduler's Deployments, and whether each is
pushed or `kind load`ed, first without a registry and then with one. The
push itself, against a real registry, is tests/integration/test_registry_existing_kind.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster_contract import cluster_vars
from tests.support.playbook_json import run_playbook

REGISTRY = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/interference"


def rendered(tmp_path: Path, images_registry: str) -> dict[str, Any]:
    """What the roles render on kind with `images_registry` set to the given value ("" for none)."""
    def include(role: str, tasks_from: str) -> dict[str, Any]:
        # public: the role defaults (push, kind load) stay readable after the include, as with import_role.
        return {"ansible.builtin.include_role": {"name": f"interference.orchestrator.{role}", "tasks_from": tasks_from,
                                                 "public": True}}

    shown = {
        "workloads": "{{ pts_images_refs }}",
        "push": "{{ pts_images_push }}",
        "extender": "{{ scheduler_extender_manifests | selectattr('kind', 'equalto', 'Deployment') "
                    "| map(attribute='spec.template.spec.containers') | flatten | map(attribute='image') | first }}",
        "extender_push": "{{ scheduler_extender_image_push }}",
        "extender_kind_load": "{{ scheduler_extender_kind_load }}",
        "plugins": "{{ scheduler_plugins_manifests | selectattr('kind', 'equalto', 'Deployment') "
                   "| map(attribute='spec.template.spec.containers') | flatten | map(attribute='image') | first }}",
        "plugins_push": "{{ scheduler_plugins_image_push }}",
        "plugins_kind_load": "{{ scheduler_plugins_kind_load }}",
    }
    plays = [{
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {**cluster_vars("kind", images_registry), "cluster_provider_image_source": "offline",
                 "images_registry": images_registry, "scheduler_extender_cluster_version": "v1.34.4"},
        "tasks": [
            include("pts_images", "tags"),
            include("scheduler_extender", "manifests"),
            include("scheduler_plugins", "manifests"),
            {"name": "Show", "ansible.builtin.set_fact": {"shown": shown}},
        ],
    }]
    tmp_path.mkdir()
    run = run_playbook(tmp_path, plays)
    assert run.returncode == 0, run.report
    (result,) = run.results("Show")
    facts: dict[str, Any] = result["ansible_facts"]["shown"]
    return facts


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("refs")
    return rendered(tmp / "local", ""), rendered(tmp / "registry", REGISTRY)


def test_without_a_registry_the_images_are_local_and_loaded_into_kind(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    local, _ = both
    assert local["workloads"]["pts/c-ray"].startswith("interference-orchestrator/povray:h-")
    assert local["extender"].startswith("interference-extender:h-")
    assert local["plugins"].startswith("interference-gpu-scheduler:h-")
    assert (local["extender_push"], local["extender_kind_load"]) == (False, True)
    assert (local["plugins_push"], local["plugins_kind_load"]) == (False, True)


def test_with_a_registry_every_deployment_names_the_pushed_reference_with_the_same_content_tag(
    both: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    local, pushed = both
    for app_image, reference in local["workloads"].items():
        name, tag = reference.rsplit(":", 1)
        assert pushed["workloads"][app_image] == f"{REGISTRY}/{name.rsplit('/', 1)[1]}:{tag}"
    assert pushed["push"] == [
        {"name": local["workloads"][key], "repository": pushed["workloads"][key]} for key in local["workloads"]
    ]
    assert pushed["extender"] == f"{REGISTRY}/{local['extender']}"
    assert pushed["plugins"] == f"{REGISTRY}/{local['plugins']}"
    assert (pushed["extender_push"], pushed["extender_kind_load"]) == (True, False)
    assert (pushed["plugins_push"], pushed["plugins_kind_load"]) == (True, False)

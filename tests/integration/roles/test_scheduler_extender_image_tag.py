"""scheduler_extender: the image tag follows the engine and the service, not the other roles' helpers.

The image holds plugins/module_utils (the engine) and interference_extender;
the helpers of single roles live in plugins/plugin_utils and are not in it, so
editing one must not retag (and rebuild) the extender.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import playbook_json
from tests.support.docker import docker_answers, import_image, remove_image
from tests.support.playbook_json import REPO, run_playbook


def extender_tag(tmp_path: Path, root: Path, **extra: str) -> str:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "scheduler_extender", "image_tag", {"ansible.builtin.debug": {"msg": "{{ scheduler_extender_image_tag }}"}}
        ),
        {"scheduler_extender_repo_root": str(root), "scheduler_extender_image_source": "registry", **extra},
    )
    assert run.returncode == 0, run.report
    return run.messages()[-1]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    for folder in ("plugins/module_utils", "plugins/plugin_utils", "interference_extender", "files/extender"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "constraints.txt", root / "constraints.txt")
    return root


def test_editing_a_role_helper_keeps_the_tag_and_editing_the_engine_changes_it(tmp_path: Path, checkout: Path) -> None:
    before = extender_tag(tmp_path, checkout)
    assert before.startswith("h-") and len(before) == 14
    with (checkout / "plugins/plugin_utils/cpu_slices.py").open("a") as helper:
        helper.write("# edited\n")
    assert extender_tag(tmp_path, checkout) == before
    with (checkout / "plugins/module_utils/model.py").open("a") as engine:
        engine.write("# edited\n")
    assert extender_tag(tmp_path, checkout) != before


@pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers: the base's image ID cannot be read")
def test_a_base_whose_bytes_changed_under_the_same_name_changes_the_tag(tmp_path: Path, checkout: Path) -> None:
    name = f"interference-orchestrator/test-extender-base-{tmp_path.name.lower()}:3.11-slim"
    base = {"scheduler_extender_registry_base_image": name}
    try:
        import_image(name, "one\n", tmp_path / "base")
        first = extender_tag(tmp_path, checkout, **base)
        assert extender_tag(tmp_path, checkout, **base) == first
        import_image(name, "two\n", tmp_path / "base")
        assert extender_tag(tmp_path, checkout, **base) != first
    finally:
        remove_image(name)

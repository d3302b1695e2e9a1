"""pts_images: content-hash tags and the skip outside kind, through ansible-playbook.

Building and loading need a Docker engine (the molecule `kind` scenario);
here we prove the tag contract the build's idempotence rests on: the same
inputs give the same tags, any edited input gives new ones.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import playbook_json
from tests.support.cluster_contract import cluster_vars
from tests.support.docker import docker_answers, import_image, remove_image
from tests.support.playbook_json import REPO, run_playbook

CONTEXT = REPO / "files" / "pts"
TESTS = ["pts/c-ray", "pts/compress-7zip", "pts/mbw", "pts/stressapptest"]


def image_refs(tmp_path: Path, **extra: Any) -> dict[str, str]:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "pts_images", "tags", {"ansible.builtin.debug": {"msg": "{{ pts_images_refs | to_json }}"}}
        ),
        extra,
    )
    assert run.returncode == 0, run.report
    return dict(json.loads(run.messages()[-1]))


@pytest.fixture
def context(tmp_path: Path) -> Path:
    copy = tmp_path / "pts-context"
    shutil.copytree(CONTEXT, copy)
    return copy


def test_one_image_per_test_named_after_it_with_a_content_hash_tag(tmp_path: Path) -> None:
    refs = image_refs(tmp_path)
    assert list(refs) == TESTS
    for test, ref in refs.items():
        assert re.fullmatch(re.escape(test) + r":h-[0-9a-f]{12}", ref), ref
    assert len(set(refs.values())) == len(TESTS)


def test_the_apps_shipped_in_group_vars_use_exactly_these_images(tmp_path: Path) -> None:
    apps = yaml.safe_load((REPO / "examples" / "testbed" / "group_vars" / "all" / "apps.yml").read_text())["apps"]
    assert sorted(app["image"] for app in apps) == sorted(image_refs(tmp_path))


def test_same_inputs_give_the_same_tags(tmp_path: Path, context: Path) -> None:
    assert image_refs(tmp_path, pts_images_context_dir=str(context)) == image_refs(
        tmp_path, pts_images_context_dir=str(context)
    )
    # Where the context lives is not an input: a copy tags like the original.
    assert image_refs(tmp_path, pts_images_context_dir=str(context)) == image_refs(tmp_path)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(
            lambda ctx: (ctx / "Dockerfile").write_text((ctx / "Dockerfile").read_text() + "\n# edit\n"),
            id="dockerfile-edited",
        ),
        pytest.param(lambda ctx: (ctx / "run-benchmark").write_text("#!/bin/sh\nexit 0\n"), id="script-edited"),
        pytest.param(lambda ctx: (ctx / "extra.txt").write_text("new file\n"), id="file-added"),
        pytest.param(lambda ctx: (ctx / "run-benchmark").rename(ctx / "run"), id="file-renamed"),
    ],
)
def test_any_edited_input_gives_every_image_a_new_tag(tmp_path: Path, context: Path, edit: Any) -> None:
    before = image_refs(tmp_path, pts_images_context_dir=str(context))
    edit(context)
    after = image_refs(tmp_path, pts_images_context_dir=str(context))
    assert list(after) == list(before)
    assert all(after[test] != before[test] for test in before)


def test_the_base_image_is_an_input(tmp_path: Path) -> None:
    assert image_refs(tmp_path) != image_refs(tmp_path, pts_images_base_image="docker.io/phoronix/pts:10.8.4")


def test_a_context_without_dockerfile_fails_with_the_variable_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README").write_text("no Dockerfile here\n")
    run = run_playbook(tmp_path, playbook_json.role_play("pts_images", "tags"), {"pts_images_context_dir": str(empty)})
    assert run.returncode != 0
    assert "pts_images_context_dir" in json.dumps(run.report)


@pytest.mark.parametrize("provider", ["kwok", "existing"])
def test_outside_kind_the_role_is_one_debug_line(tmp_path: Path, provider: str) -> None:
    run = run_playbook(
        tmp_path,
        [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "tasks": [
                    {"ansible.builtin.include_role": {"name": "interference.orchestrator.pts_images"}},
                ],
            }
        ],
        cluster_vars(provider),
    )
    assert run.returncode == 0, run.report
    assert run.stats["changed"] == 0
    (message,) = run.messages()
    assert message.startswith(f"pts_images: skipped on {provider}")
    assert "\n" not in message  # one line


def test_dockerfile_preinstalls_the_test_in_batch_mode() -> None:
    dockerfile = (CONTEXT / "Dockerfile").read_text()
    instructions = [
        line.split()[0]
        for line in dockerfile.splitlines()
        if line and not line[0].isspace() and not line.startswith("#")
    ]
    assert instructions[0] == "ARG" and "FROM" in instructions
    assert "phoronix/pts" in dockerfile
    # Batch mode configured before batch-install, or PTS prompts and the build hangs.
    assert dockerfile.index("BatchMode/Configured=TRUE") < dockerfile.index('batch-install "${PTS_TEST}"')
    assert dockerfile.index('batch-install "${PTS_TEST}"') < dockerfile.index("NoInternetCommunication=TRUE")


STUB_KIND = Path(playbook_json.__file__).parent / "stubs" / "kind"
NODES = ["cluster-kind-control-plane", "cluster-kind-worker", "cluster-kind-worker2"]


def load_calls(tmp_path: Path, refs: dict[str, str], on_nodes: dict[str, list[str]]) -> tuple[Any, dict[str, set[str]]]:
    """Run load.yml with the stand-in kind; return the run and image -> nodes it was loaded into."""
    state = tmp_path / "kind-state"
    (state / "clusters").mkdir(parents=True, exist_ok=True)
    (state / "clusters" / "cluster-kind").write_text(json.dumps({"nodes": NODES}))
    (state / "calls.jsonl").unlink(missing_ok=True)
    run = run_playbook(
        tmp_path,
        playbook_json.role_play("pts_images", "load"),
        {"pts_images_kind_bin": str(STUB_KIND), "pts_images_refs": refs, "pts_images_on_nodes": on_nodes},
        env={"STUB_KIND_STATE": str(state)},
    )
    calls = (
        [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
        if (state / "calls.jsonl").exists()
        else []
    )
    loaded = {}
    for call in calls:
        assert call[:2] == ["load", "docker-image"]
        assert call[call.index("--name") + 1] == "cluster-kind"
        loaded[call[2]] = set(call[call.index("--nodes") + 1].split(","))
    return run, loaded


def test_loads_each_image_only_into_the_nodes_that_lack_that_exact_reference(tmp_path: Path) -> None:
    refs = {
        "pts/c-ray": "pts/c-ray:h-aaaaaaaaaaaa",
        "pts/mbw": "pts/mbw:h-bbbbbbbbbbbb",
        "busybox": "busybox:1.36",
        "registry.example:5000/team/tool": "registry.example:5000/team/tool:v1",
    }
    on_nodes = {
        # containerd lists Docker Hub images fully qualified.
        NODES[0]: ["docker.io/pts/c-ray:h-aaaaaaaaaaaa", "docker.io/library/busybox:1.36"],
        NODES[1]: ["docker.io/pts/c-ray:h-aaaaaaaaaaaa", "docker.io/library/busybox:1.36"],
        NODES[2]: [
            "docker.io/pts/c-ray:h-000000000000",
            "docker.io/library/busybox:1.36",
            "registry.example:5000/team/tool:v1",
        ],
    }
    run, loaded = load_calls(tmp_path, refs, on_nodes)
    assert run.returncode == 0, run.report
    assert loaded == {
        "pts/c-ray:h-aaaaaaaaaaaa": {NODES[2]},  # an older tag there is not this image
        "pts/mbw:h-bbbbbbbbbbbb": set(NODES),
        "registry.example:5000/team/tool:v1": {NODES[0], NODES[1]},
    }
    (task,) = run.results("Load each image into the nodes that lack it")
    assert [item.get("changed", False) for item in task["results"]] == [True, True, False, True]


def test_nothing_is_loaded_when_every_node_has_every_image(tmp_path: Path) -> None:
    refs = {"pts/c-ray": "pts/c-ray:h-aaaaaaaaaaaa"}
    run, loaded = load_calls(tmp_path, refs, {node: ["docker.io/pts/c-ray:h-aaaaaaaaaaaa"] for node in NODES})
    assert run.returncode == 0, run.report
    assert loaded == {}
    assert run.stats["changed"] == 0


@pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers: the base's image ID cannot be read")
def test_the_base_image_counts_by_its_bytes_not_only_its_name(tmp_path: Path) -> None:
    """One base name whose bytes change (a moved :latest, a base made again) gives every image a new tag."""
    name = f"interference-orchestrator/test-base-{tmp_path.name.lower()}:latest"
    try:
        import_image(name, "one\n", tmp_path / "base")
        first = image_refs(tmp_path, pts_images_base_image=name)
        assert image_refs(tmp_path, pts_images_base_image=name) == first
        import_image(name, "two\n", tmp_path / "base")
        moved = image_refs(tmp_path, pts_images_base_image=name)
        assert list(moved) == list(first)
        assert all(moved[test] != first[test] for test in first)
    finally:
        remove_image(name)

"""The filter through a real ansible-playbook run, resolved by FQCN from the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = Path(__file__).parent / "playbooks" / "place.yml"


def run_playbook(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [
        str(Path(sys.executable).parent / "ansible-playbook"),
        str(PLAYBOOK),
        "-e", "cluster_name=cluster-kind",
        "-e", f"output_file={tmp_path / 'plan.json'}",
        *extra,
    ]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_playbook_places_seed_apps(tmp_path: Path) -> None:
    result = run_playbook(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    plan = json.loads((tmp_path / "plan.json").read_text())
    nodes = {item["name"]: item["nodes"] for item in plan["placed"]}
    assert nodes["c-ray"] != nodes["compress-7zip"]
    assert nodes["mbw"] != nodes["stressapptest"]
    assert {n for placed in nodes.values() for n in placed} == {"cluster-kind-worker", "cluster-kind-worker2"}
    assert plan["report"]["total_interference"] == 0
    assert plan["report"]["proven_optimal"] is True


def test_bad_input_fails_with_app_and_field_and_no_traceback(tmp_path: Path) -> None:
    bad = json.dumps({"apps": [{"name": "c-ray", "image": "pts/c-ray", "type": "cpu", "replicas": 0}]})
    result = run_playbook(tmp_path, "-e", bad)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "apps[0] (c-ray): field 'replicas': must be a whole number from 1 to 10,000, got 0" in output
    assert "Traceback" not in output
    assert not (tmp_path / "plan.json").exists()


@pytest.mark.parametrize(
    ("apps", "message"),
    [
        ([{"name": "c-ray", "image": "pts/c-ray", "type": "cpu", "replicas": "²"}],
         "apps[0] (c-ray): field 'replicas': must be a whole number from 1 to 10,000, got '²'"),
        (["c-ray"], "apps[0]: field '(item)': must be a mapping, got 'c-ray'"),
    ],
    ids=["replicas-superscript-two", "app-that-is-a-string"],
)
def test_hostile_input_fails_in_the_users_words(tmp_path: Path, apps: list[Any], message: str) -> None:
    """Values from -e reach the filter tagged by Ansible (_AnsibleTaggedStr...): no such name may reach the user."""
    result = run_playbook(tmp_path, "-e", json.dumps({"apps": apps}))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert message in output
    assert "Traceback" not in output
    assert "_Ansible" not in output
    assert "invalid literal" not in output


def test_unknown_previous_node_is_reported(tmp_path: Path) -> None:
    result = run_playbook(tmp_path, "-e", json.dumps({"previous": {"mbw": ["gone-node"]}}))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "apps[2] (mbw): field 'previous': unknown node 'gone-node'" in output


def test_collision_warns_naming_apps(tmp_path: Path) -> None:
    crowded = json.dumps({"apps": [{"name": n, "image": "i", "type": "cpu"} for n in ("a", "b", "c")]})
    result = run_playbook(tmp_path, "-e", crowded)
    assert result.returncode == 0, result.stdout + result.stderr
    # The filter returns the warning (placement_report's `warning`), the playbook prints it, the filter nothing.
    assert "WARNING: zero interference is impossible" in result.stdout
    assert "zero interference is impossible" not in result.stderr

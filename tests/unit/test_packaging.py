"""What the collection ships: the rules a user's install relies on, checked on the files (no process).

The tarball test (tests/integration/test_tarball_kwok.py) runs the real thing;
these catch the same mistakes in seconds: a playbook calling a role entry
point that has no argument_specs, group_vars back in the collection, a role
looking for tools in a folder the tarball does not have.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = sorted((REPO / "playbooks").glob("*.yml"))


def _role_calls(node: Any) -> Iterator[tuple[str, str]]:
    """(role, entry point) of every import_role/include_role in a playbook, at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ansible.builtin.import_role", "ansible.builtin.include_role") and isinstance(value, dict):
                yield value["name"], Path(value.get("tasks_from", "main")).stem
            else:
                yield from _role_calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from _role_calls(item)


def test_every_role_entry_point_a_playbook_calls_has_argument_specs() -> None:
    calls = {call for playbook in PLAYBOOKS for call in _role_calls(yaml.safe_load(playbook.read_text()))}
    assert calls, "no role calls found in playbooks/"
    missing = []
    for role, entry_point in sorted(calls):
        specs = REPO / "roles" / role.rsplit(".", 1)[-1] / "meta" / "argument_specs.yml"
        if entry_point not in yaml.safe_load(specs.read_text())["argument_specs"]:
            missing.append(f"{role} {entry_point}")
    assert missing == []


def test_the_playbooks_callable_by_fqcn_are_under_playbooks() -> None:
    assert {p.stem for p in PLAYBOOKS} >= {"site", "teardown", "add_app", "experiment", "profile"}
    # The root site.yml of the checkout only imports the collection's playbook.
    assert yaml.safe_load((REPO / "site.yml").read_text()) == [
        {"name": "Provision the cluster and place the apps", "ansible.builtin.import_playbook": "playbooks/site.yml"}
    ]


def test_the_collection_carries_no_group_vars_and_no_directory_links() -> None:
    assert not (REPO / "group_vars").exists()
    assert not (REPO / "playbooks" / "group_vars").exists()
    # collections/ holds the link `make setup` makes (not tracked); .venv and .cache are not the collection's.
    skip = {".git", ".venv", ".cache", "collections", "node_modules"}
    links = []
    for root, dirs, _files in os.walk(REPO):
        links += [str(Path(root, d).relative_to(REPO)) for d in dirs if Path(root, d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in skip and not Path(root, d).is_symlink()]
    assert links == []


def test_no_role_or_playbook_looks_for_tools_or_writes_inside_the_collection() -> None:
    # <collection>/.cache never ships; playbook_dir/.. is the collection once installed.
    pattern = re.compile(r"\.cache/bin|playbook_dir\s*\}\}/\.\.|playbook_dir ~ '/\.\.|role_path ~ '/\.\./\.\./\.cache")
    offenders = [
        str(path.relative_to(REPO))
        for path in [*PLAYBOOKS, *(REPO / "roles").rglob("*.yml"), *(REPO / "roles").rglob("*.j2")]
        if pattern.search(path.read_text())
    ]
    assert offenders == []

"""Every filter plugin is documented for `ansible-doc -t filter`, as Ansible itself reads the docs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.playbook_json import REPO


def test_every_filter_is_documented_for_ansible_doc() -> None:
    """`ansible-doc -t filter` reads DOCUMENTATION, EXAMPLES and RETURN of each filter."""
    names = sorted(path.stem for path in (REPO / "plugins" / "filter").glob("*.py"))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-t", "filter", "--json",
         *(f"interference.orchestrator.{name}" for name in names)],
        capture_output=True, text=True, check=False, cwd=REPO, env={"ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
                                                                    "PATH": str(Path(sys.executable).parent)},
    )
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    assert sorted(docs) == [f"interference.orchestrator.{name}" for name in names]
    for name, doc in docs.items():
        assert doc["doc"]["short_description"], name
        assert doc["examples"].strip(), name
        assert "_value" in doc["return"], name


# What a user calls in their own playbook (docs/architecture.md, "Public surface"); every other filter is the glue of
# one role and says so in its documentation.
PUBLIC = {"place", "placement_report", "plan_apps", "nodes_from_k8s", "measured_profiles"}


def test_every_filter_is_public_or_says_it_is_internal() -> None:
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        internal = "Internal to the " in path.read_text()
        assert internal != (path.stem in PUBLIC), f"{path.stem}: public {path.stem in PUBLIC}, says internal {internal}"

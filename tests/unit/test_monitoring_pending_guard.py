"""Every helm install of the monitoring role is preceded by the pending-release recovery (no process).

A run killed while helm installs leaves the release pending-*, and helm then
refuses every later install of it. roles/monitoring/tasks/pending.yml recovers
that (tests/integration/test_helm_pending_kwok.py runs both of its branches
with the real helm); this checks, on the files, that each install task calls it
first for the same release. The offline chart's install once lacked it and the
rerun after a killed install failed with helm's "another operation
(install/upgrade/rollback) is in progress" (docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

TASKS = Path(__file__).resolve().parents[2] / "roles" / "monitoring" / "tasks"


def task_lists(node: Any) -> Iterator[list[dict[str, Any]]]:
    """The file's task list and every block/rescue/always list within it."""
    if isinstance(node, list):
        yield node
        for task in node:
            if isinstance(task, dict):
                for key in ("block", "rescue", "always"):
                    if key in task:
                        yield from task_lists(task[key])


def installs_and_what_precedes_them() -> list[tuple[str, str, dict[str, Any] | None]]:
    found = []
    for path in sorted(TASKS.glob("*.yml")):
        for tasks in task_lists(yaml.safe_load(path.read_text())):
            for index, task in enumerate(tasks):
                helm = task.get("kubernetes.core.helm")
                if isinstance(helm, dict) and helm.get("release_state", "present") == "present":
                    found.append((f"{path.name}: {task['name']}", helm["release_name"],
                                  tasks[index - 1] if index else None))
    return found


def test_the_role_has_the_three_installs_this_guards() -> None:
    names = [name for name, _, _ in installs_and_what_precedes_them()]
    assert names == [
        "chart.yml: Install kube-prometheus-stack",
        "offline.yml: Install the offline monitoring chart",
        "probe_release.yml: Install the interference probe",
    ]


def test_each_install_first_recovers_its_own_release_if_left_pending() -> None:
    for name, release, before in installs_and_what_precedes_them():
        assert before is not None, f"{name}: nothing before it, so no pending-release recovery"
        assert before.get("ansible.builtin.include_tasks") == "pending.yml", f"{name}: not preceded by pending.yml"
        assert before.get("vars", {}).get("monitoring_pending_release_name") == release, (
            f"{name}: pending.yml is called for {before.get('vars')}, not for its release {release}"
        )

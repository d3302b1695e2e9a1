"""The strategy tests/support/strategy.py chooses is the one ansible-playbook really runs.

Mitogen names the interpreters it keeps warm `python(mitogen:USER@HOST:PID)`;
Ansible's own strategy runs each module as a fresh `AnsiballZ_<module>.py`. A
shell task reports its parent process, which is the module's interpreter (`ps -ww`:
without it ps cuts the line at 80 columns, before the script's name, when no
terminal is attached: a fresh clone in a longer path failed so).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.playbook_json import run_playbook
from tests.support.strategy import strategy_env

PARENT = [{
    "hosts": "localhost",
    "gather_facts": False,
    "tasks": [
        {"name": "The module's interpreter", "ansible.builtin.shell": "ps -ww -o args= -p $PPID",
         "register": "parent", "changed_when": False},
        {"name": "Say it", "ansible.builtin.debug": {"msg": "{{ parent.stdout }}"}},
    ],
}]


@pytest.mark.parametrize(("drives_a_cluster", "interpreter"), [(True, "(mitogen:"), (False, "AnsiballZ_command.py")])
def test_each_kind_of_module_runs_the_strategy_chosen_for_it(
    tmp_path: Path, drives_a_cluster: bool, interpreter: str,
) -> None:
    run = run_playbook(tmp_path, PARENT, env=strategy_env(drives_a_cluster=drives_a_cluster, environ={}))
    assert run.returncode == 0, run.failures()
    [parent] = run.messages()
    assert interpreter in parent, parent


def test_a_module_that_renders_on_localhost_runs_its_playbooks_with_the_strategy_chosen_for_it() -> None:
    """conftest's ansible_strategy fixture: this module has no `cluster` or `kind` mark."""
    assert os.environ["ANSIBLE_STRATEGY"] == strategy_env(drives_a_cluster=False)["ANSIBLE_STRATEGY"]

"""kwok_cluster: nodes that do not turn Ready in time fail the run with the kwok controller's own words.

CI (2026-12-02, under load) once saw kwok's controller set no status on a new
Node within the fixed 60 s, and the run said only "Timed out waiting on
resource". The wait is now `kwok_cluster_node_ready_timeout` (default 180 s)
and a timeout names the variable and the controller's last log lines. Shown
here with a timeout of 0 s, which no node can meet, on a real kwok cluster the
role creates (kwokctl, the binaries from `make tools`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import kwok
from tests.support.playbook_json import role_play, run_playbook
from tests.support.strategy import strategy_env
from tests.support.tools import tools_bin

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]


def test_nodes_not_ready_in_time_fail_naming_the_variable_and_the_controllers_log(tmp_path: Path) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    name = f"ready-{worker}-{kwok.free_port()}"
    workdir = tmp_path / "kwok"
    variables = {"cluster_name": name, "cluster_workers": 1, "cluster_kwok_workdir": str(workdir),
                 "kwok_cluster_user_kubeconfig": "", "kwok_cluster_node_ready_timeout": 0,
                 "interference_tools_bin": str(tools_bin())}
    try:
        run = run_playbook(tmp_path, role_play("kwok_cluster"), variables)
        assert run.returncode != 0, run.failures()
        [failed] = [r for r in run.results("Fail naming the nodes and what the kwok controller said")
                    if r.get("failed")]
        message = str(failed["msg"])
        assert f"the nodes of {name} did not turn Ready within 0 s (kwok_cluster_node_ready_timeout)" in message
        assert f"kwokctl --name {name} logs kwok-controller, exit 0" in message, message
        # The controller's own lines follow: kwok logs JSON records with a level.
        assert '"level":' in message.split("exit 0):", 1)[1], message
    finally:
        # The role made the cluster in `workdir`, as KwokCluster lays it out; none is there when the role failed first.
        with contextlib.suppress(subprocess.CalledProcessError):
            kwok.KwokCluster(name=name, workdir=workdir).delete()


def test_a_module_that_drives_a_cluster_runs_its_playbooks_with_the_strategy_chosen_for_it() -> None:
    """conftest's ansible_strategy fixture reads this module's `cluster` mark (tests/support/strategy.py)."""
    assert os.environ["ANSIBLE_STRATEGY"] == strategy_env(drives_a_cluster=True)["ANSIBLE_STRATEGY"]

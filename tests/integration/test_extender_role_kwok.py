"""The scheduler_extender role on kwok, for real: the local extender process and kwokctl's scheduler.

The cluster is created as site.yml does on kwok: the role's scheduler_config
entry point renders the KubeSchedulerConfiguration first, kwokctl gets it with
--kube-scheduler-config. Then the role's main entry point runs like site.yml
runs it (cluster_provider_resolved=kwok and the connection facts).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kwok
from tests.support.cluster_contract import cluster_vars
from tests.support.playbook_json import PlaybookRun, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]


class RoleRun:
    def __init__(self, workdir: Path, name: str, listen: str) -> None:
        self.workdir = workdir
        self.local_dir = workdir / "interference-extender"
        self.variables: dict[str, Any] = {
            **cluster_vars(
                "kwok", kubeconfig=str(workdir / "clusters" / name / "kubeconfig.yaml"), context=f"kwok-{name}"
            ),
            "cluster_name": name,
            "cluster_kwok_workdir": str(workdir),
            "cluster_kubeconfig": str(workdir / "clusters" / name / "kubeconfig.yaml"),
            "cluster_context": f"kwok-{name}",
            "scheduler_extender_local_listen": listen,
            # Plain HTTP, as the cluster was created with (render_scheduler_config); the role's
            # HTTPS is tests/integration/test_extender_auth_kwok.py.
            "scheduler_extender_tls": False,
        }

    def run(self, tmp_path: Path, check: bool = False, **extra: Any) -> PlaybookRun:
        plays = [{"hosts": "localhost", "gather_facts": False,
                  "roles": [{"role": "interference.orchestrator.scheduler_extender"}]}]
        return run_playbook(tmp_path, plays, {**self.variables, **extra}, check=check)

    def pid(self) -> int | None:
        path = self.local_dir / "extender.pid"
        return int(path.read_text()) if path.exists() else None


@pytest.fixture(scope="module")
def role(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoleRun]:
    workdir = tmp_path_factory.mktemp("extender-role")
    name = f"ext-role-{kwok.free_port()}"
    listen = f"127.0.0.1:{kwok.free_port()}"
    config, _ = kwok.render_scheduler_config(workdir / "interference-extender", listen)
    cluster = kwok.KwokCluster(name=name, workdir=workdir, scheduler_config=config)
    cluster.create()
    state = RoleRun(workdir, name, listen)
    try:
        yield state
    finally:
        pid = state.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
        cluster.delete()


def test_first_run_starts_the_extender(role: RoleRun, tmp_path: Path) -> None:
    run = role.run(tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.results("Start the extender in the background on " + role.variables["scheduler_extender_local_listen"])
    assert kwok.http_status(role.variables["scheduler_extender_local_listen"], "/readyz") == 200
    assert kwok.metric(role.variables["scheduler_extender_local_listen"], "interference_extender_view_synced") == 1.0


def test_second_run_and_check_mode_change_nothing(role: RoleRun, tmp_path: Path) -> None:
    pid = role.pid()
    again = role.run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stats["changed"] == 0
    checked = role.run(tmp_path, check=True)
    assert checked.returncode == 0, checked.stderr
    assert checked.stats["changed"] == 0
    assert role.pid() == pid


def test_a_new_policy_restarts_the_extender(role: RoleRun, tmp_path: Path) -> None:
    before = role.pid()
    run = role.run(tmp_path, scheduler_extender_forbidden_pairs=[["memory", "memory"]])
    assert run.returncode == 0, run.stderr
    assert role.pid() not in (None, before)
    assert "forbidden_pairs:\n  - [\"memory\", \"memory\"]" in (role.local_dir / "policy.yml").read_text()
    assert kwok.http_status(role.variables["scheduler_extender_local_listen"], "/readyz") == 200


def test_a_cluster_created_without_the_configuration_is_refused(tmp_path: Path) -> None:
    workdir = tmp_path / "kwok"
    workdir.mkdir()
    name = f"ext-noconf-{kwok.free_port()}"
    cluster = kwok.KwokCluster(name=name, workdir=workdir)
    cluster.create()
    state = RoleRun(workdir, name, f"127.0.0.1:{kwok.free_port()}")
    try:
        run = state.run(tmp_path)
        assert run.returncode != 0
        (check,) = run.results("Check that kwokctl's scheduler calls the extender")
        assert "kwok_cluster_scheduler_config" in check["msg"]
    finally:
        pid = state.pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
        cluster.delete()

"""kwok_cluster: nodes that do not turn Ready in time fail the run with the kwok controller's own words;
a stalled API server does not take the controller manager or the scheduler down with it.

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
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

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


def test_a_stalled_api_server_leaves_the_controller_manager_and_the_scheduler_running(tmp_path: Path) -> None:
    """CI (2026-12-07, under load) once saw a kwok cluster never get its `default` ServiceAccount.

    With leader election on, a controller manager or scheduler that cannot renew
    its lease within 10 s exits ("leaderelection lost"), and kwokctl's binary
    runtime starts nothing again. Here the role's cluster has its API server
    stopped (SIGSTOP) for 20 s; both must still run afterwards and the controller
    manager must still work (a Deployment gets its ReplicaSet, an app namespace
    its `default` ServiceAccount).
    """
    from kubernetes import client, config

    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    name = f"stall-{worker}-{kwok.free_port()}"
    workdir = tmp_path / "kwok"
    variables = {"cluster_name": name, "cluster_workers": 1, "cluster_kwok_workdir": str(workdir),
                 "kwok_cluster_user_kubeconfig": "", "interference_tools_bin": str(tools_bin())}
    cluster = kwok.KwokCluster(name=name, workdir=workdir)
    try:
        run = run_playbook(tmp_path, role_play("kwok_cluster"), variables)
        assert run.returncode == 0, run.failures()
        apiserver = cluster.running_pid("kube-apiserver")
        components = {c: cluster.running_pid(c) for c in ("kube-controller-manager", "kube-scheduler")}
        assert apiserver and all(components.values()), components
        os.kill(apiserver, signal.SIGSTOP)
        try:
            time.sleep(20)
        finally:
            os.kill(apiserver, signal.SIGCONT)
        time.sleep(3)  # a lost lease ends the process within a second of the failed renewal
        for component, pid in components.items():
            # The same process: kwokctl's binary runtime starts none again.
            assert cluster.running_pid(component) == pid, cluster.component_report(component)

        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        namespace: Any = {"metadata": {"name": "after-stall"}}
        core.create_namespace(namespace)
        deployment: Any = {
            "metadata": {"name": "probe"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "probe"}},
                     "template": {"metadata": {"labels": {"app": "probe"}},
                                  "spec": {"containers": [{"name": "c", "image": "none"}]}}},
        }
        apps.create_namespaced_deployment("after-stall", deployment)
        kwok.wait_for("the Deployment's ReplicaSet",
                      lambda: apps.list_namespaced_replica_set("after-stall").items, timeout=180.0)
        kwok.wait_for("the namespace's default ServiceAccount",
                      lambda: core.list_namespaced_service_account("after-stall").items, timeout=180.0)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster.delete()

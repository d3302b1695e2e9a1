"""monitoring's pending.yml on a real API server (kwokctl, local binaries): a helm run killed midway is recovered.

Both branches, with the real helm, on a one-ConfigMap chart whose hook is a Pod
that never succeeds here (kwok runs no containers: the Pod stays Pending without
a node, and kwok-controller would only ever make it Running). helm stores the
release as pending before it runs the hooks and waits for the hook; it is
killed (SIGKILL) while it waits. The task file then runs through
ansible-playbook, as chart.yml, offline.yml and probe_release.yml include it.

- pending-upgrade: the chart is installed (revision 1, deployed), then upgraded
  to a version with a pre-upgrade hook; the recovery rolls back to revision 1.
- pending-install: the first install has a pre-install hook; the recovery
  uninstalls the release, so the install that follows it in the role starts
  clean. (This case ran on kind, killing a whole site.yml during the offline
  chart's install, in the quiet CI step until 2026-12-03; the branch it tests
  is this task file's, and kwok runs it in seconds instead of minutes.)
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kwok
from tests.support.playbook_json import VENV_BIN, PlaybookRun, role_play, run_playbook
from tests.support.tools import tools_bin

HELM = tools_bin() / "helm"
NAMESPACE = "monitoring"
RELEASE = "pending-probe"
RECOVERY = (
    f"monitoring: release {NAMESPACE}/{RELEASE} was left pending-upgrade by an interrupted run: "
    "rolling it back to its last deployed revision"
)

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
    pytest.mark.skipif(not HELM.is_file(), reason=f"run `make tools` first: no helm in {HELM.parent}"),
    # Per test: a cluster, a helm run killed midway and two playbook runs; about 11 s each on a quiet machine.
    pytest.mark.timeout(600),
]


def write_chart(root: Path, version: str, hook: str = "") -> Path:
    """A chart of one ConfigMap; with `hook` (pre-install, pre-upgrade), also a hook Pod that never succeeds on kwok."""
    chart = root / f"chart-{version}"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": "pending-probe", "version": version, "type": "application"})
    )
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pending-probe"},
        "data": {"version": version},
    }
    (chart / "templates" / "configmap.yaml").write_text(yaml.safe_dump(configmap))
    if hook:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pending-probe-{hook}",
                "annotations": {"helm.sh/hook": hook, "helm.sh/hook-weight": "0"},
            },
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "containers": [{"name": "wait", "image": "registry.invalid/never:1"}],
            },
        }
        (chart / "templates" / "hook.yaml").write_text(yaml.safe_dump(pod))
    return chart


def helm(cluster: kwok.KwokCluster, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HELM), *args, "--namespace", NAMESPACE, "--kubeconfig", str(cluster.kubeconfig)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def release_status(cluster: kwok.KwokCluster, env: dict[str, str]) -> str:
    proc = helm(cluster, env, "status", RELEASE, "-o", "json")
    return str(json.loads(proc.stdout)["info"]["status"]) if proc.returncode == 0 else ""


def history(cluster: kwok.KwokCluster, env: dict[str, str]) -> list[dict[str, Any]]:
    proc = helm(cluster, env, "history", RELEASE, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def killed_while_pending(cluster: kwok.KwokCluster, env: dict[str, str], verb: str, chart: Path, log: Path) -> str:
    """`helm <verb>` (install, upgrade) of `chart`, SIGKILLed once `helm status` says pending-<verb>.

    Returns what happened. helm is one process, started here: killing it is enough.
    (Killing a whole ansible-playbook run would not be: its worker processes call
    setsid(), so helm is outside its process group; docs/reliability.md.)
    """
    with log.open("w") as out:
        run = subprocess.Popen(
            [
                str(HELM),
                verb,
                RELEASE,
                str(chart),
                "--namespace",
                NAMESPACE,
                "--kubeconfig",
                str(cluster.kubeconfig),
                "--timeout",
                "10m",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while run.poll() is None and time.monotonic() < deadline:
            if (status := release_status(cluster, env)) == f"pending-{verb}":
                run.kill()
                run.wait()
                return f"killed {status}"
            time.sleep(0.5)
        if run.poll() is None:
            return f"timed out before the {verb} was seen pending"
        return (
            f"helm {verb} ended (exit {run.returncode}) before it was seen pending: "
            f"{release_status(cluster, env)!r}; {log.read_text()[-2000:]}"
        )
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def helm_env(tmp_path: Path) -> dict[str, str]:
    """helm's own folders in tmp_path: nothing of the user's helm is read or written."""
    return {
        **os.environ,
        "PATH": f"{HELM.parent}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **{f"HELM_{kind}_HOME": str(tmp_path / "helm" / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")},
    }


def recovery_variables(cluster: kwok.KwokCluster) -> dict[str, Any]:
    return {
        "cluster_kubeconfig": str(cluster.kubeconfig),
        "cluster_context": f"kwok-{cluster.name}",
        "monitoring_namespace": NAMESPACE,
        "monitoring_pending_release_name": RELEASE,
        "monitoring_wait_timeout": "2m",
    }


def wait_for_default_service_account(cluster: kwok.KwokCluster) -> None:
    """A hook Pod is admitted only once the namespace's default ServiceAccount exists."""
    core = cluster.api()
    kwok.wait_for(
        f"the {NAMESPACE} namespace's default ServiceAccount",
        lambda: core.list_namespaced_service_account(NAMESPACE, field_selector="metadata.name=default").items,
    )


def recovery_then_a_second_run(
    tmp_path: Path, cluster: kwok.KwokCluster, env: dict[str, str]
) -> PlaybookRun:
    """pending.yml through ansible-playbook, then once more; returns the first run (the recovery).

    The second must find nothing pending: changed=0 and no recovery line. So what a
    test asserts on the cluster afterwards holds after both runs.
    """
    plays = role_play("monitoring", "pending")
    variables = recovery_variables(cluster)
    recovered = run_playbook(tmp_path, plays, variables, env=env)
    assert recovered.returncode == 0, recovered.failures()
    again = run_playbook(tmp_path, plays, variables, env=env)
    assert again.returncode == 0, again.failures()
    assert again.stats["changed"] == 0, again.stats
    assert not any("interrupted run" in line for line in again.messages()), again.messages()
    return recovered


@pytest.fixture
def helm_cluster(tmp_path: Path) -> Iterator[tuple[kwok.KwokCluster, dict[str, str]]]:
    """A kwok cluster of the test's own and helm's environment; the cluster is deleted after the test."""
    cluster = kwok.KwokCluster(name=f"helm-pending-{kwok.free_port()}", workdir=tmp_path / "kwok")
    cluster.create()
    try:
        yield cluster, helm_env(tmp_path)
    finally:
        cluster.delete()


def test_a_helm_upgrade_killed_midway_is_rolled_back_to_its_last_deployed_revision_then_left_alone(
    tmp_path: Path, helm_cluster: tuple[kwok.KwokCluster, dict[str, str]]
) -> None:
    cluster, env = helm_cluster
    installed = helm(
        cluster,
        env,
        "install",
        RELEASE,
        str(write_chart(tmp_path, "1.0.0")),
        "--create-namespace",
        "--wait",
    )
    assert installed.returncode == 0, installed.stderr
    wait_for_default_service_account(cluster)

    killed = killed_while_pending(
        cluster, env, "upgrade", write_chart(tmp_path, "2.0.0", "pre-upgrade"), tmp_path / "killed-upgrade.log"
    )
    assert killed == "killed pending-upgrade"
    before = [(r["revision"], r["status"]) for r in history(cluster, env)]
    assert before == [(1, "deployed"), (2, "pending-upgrade")]

    recovered = recovery_then_a_second_run(tmp_path, cluster, env)
    assert any(RECOVERY in line for line in recovered.messages()), recovered.messages()
    assert recovered.stats["changed"] == 1, recovered.stats
    assert recovered.results("Uninstall the release whose install never finished")[0].get("skipped")
    assert release_status(cluster, env) == "deployed"
    revisions = history(cluster, env)
    assert revisions[-1]["revision"] == 3, revisions
    assert revisions[-1]["status"] == "deployed", revisions
    assert revisions[-1]["description"] == "Rollback to 1", revisions
    # The second run left the history as the recovery made it.
    assert len(history(cluster, env)) == 3


def test_a_helm_install_killed_midway_is_uninstalled_so_the_install_starts_clean_then_left_alone(
    tmp_path: Path, helm_cluster: tuple[kwok.KwokCluster, dict[str, str]]
) -> None:
    cluster, env = helm_cluster
    core = cluster.api()
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    wait_for_default_service_account(cluster)
    killed = killed_while_pending(
        cluster, env, "install", write_chart(tmp_path, "1.0.0", "pre-install"), tmp_path / "killed-install.log"
    )
    assert killed == "killed pending-install"
    assert [(r["revision"], r["status"]) for r in history(cluster, env)] == [(1, "pending-install")]

    recovered = recovery_then_a_second_run(tmp_path, cluster, env)
    line = (
        f"monitoring: release {NAMESPACE}/{RELEASE} was left pending-install by an interrupted run: "
        "uninstalling it, then installing again."
    )
    assert line in recovered.messages(), recovered.messages()
    assert recovered.results("Roll the release back to its last deployed revision")[0].get("skipped")
    assert recovered.stats["changed"] == 1, recovered.stats
    # Gone, history and all: the role's install that follows is a first install.
    assert release_status(cluster, env) == ""
    assert helm(cluster, env, "history", RELEASE).returncode != 0

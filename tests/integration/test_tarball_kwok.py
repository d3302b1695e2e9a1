"""The collection as users get it: built, installed from its tarball, run by FQCN from an empty folder.

`ansible-galaxy collection build` of the checkout, `ansible-galaxy collection
install -p` into an empty folder, then, from another empty folder holding only
its own inventory (localhost and ONE app), with no ansible.cfg and the tools on
PATH only (the tools folder points at an empty directory):

- `ansible-playbook interference.orchestrator.site -e cluster_provider=kwok`
  places exactly that one app, and its pod runs (a real control plane, kwok's
  simulated nodes);
- a second run reports changed=0;
- `interference.orchestrator.experiment` writes its run folder under
  ./interference-output of the working folder (kwok serves no pod logs, so the
  run stops at reading its first result, after the folder exists);
- `interference.orchestrator.teardown` deletes the kwok cluster;
- `ansible-galaxy collection verify --offline` finds the installed collection
  unmodified: nothing was written into it.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kwok
from tests.support.playbook_json import REPO, VENV_BIN
from tests.support.tools import tools_bin

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
CLUSTER = f"tarball-{WORKER}"
APP = {"name": "solo-c-ray", "image": "pts/c-ray", "type": "cpu"}
NAMESPACE = "interference-apps"
RECAP = re.compile(r"^localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


class Installed:
    """The installed collection and an empty working folder with its own inventory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.collections = root / "collections"
        self.path = self.collections / "ansible_collections" / "interference" / "orchestrator"
        self.work = root / "work"
        self.kwok_workdir = root / "kwok"
        self.empty_tools = root / "no-tools"
        # The role's default, machine-wide creation lock: kwokctl picks its ports when it creates a cluster, so
        # this creation must take turns with the other tests' (with a lock of its own, it once raced another
        # worker's creation for port 32763 and the kwok controller could not bind).
        self.create_lock = Path(kwok.CREATE_LOCK)

    def env(self) -> dict[str, str]:
        """No ansible.cfg, the installed collection only, the tools on PATH (never the tools folder)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        env.update(
            ANSIBLE_COLLECTIONS_PATH=str(self.collections),
            ANSIBLE_LOCAL_TEMP=str(self.root / "ansible-tmp"),
            ANSIBLE_NOCOLOR="1",
            INTERFERENCE_TOOLS_BIN=str(self.empty_tools),
            KWOK_WORKDIR=str(self.kwok_workdir),
            # Python's own bytecode cache: Ansible imports the filter plugins from the installed tree, which
            # leaves plugins/filter/__pycache__ there, and `collection verify` reports that directory as
            # modified (ansible/ansible#81628). Not a file the collection writes; anything else would show.
            PYTHONDONTWRITEBYTECODE="1",
            PATH=f"{tools_bin()}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        return env

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(list(args), cwd=self.work, env=self.env(), capture_output=True, text=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr}")
        return proc

    def playbook(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(VENV_BIN / "ansible-playbook"), "-i", "hosts.yml", f"interference.orchestrator.{name}",
                        "-e", "cluster_provider=kwok", *args, check=check)

    def api(self) -> tuple[Any, Any]:
        from kubernetes import client, config

        kubeconfig = self.kwok_workdir / "clusters" / CLUSTER / "kubeconfig.yaml"
        api_client = config.new_client_from_config(str(kubeconfig), context=f"kwok-{CLUSTER}")
        return client.CoreV1Api(api_client), client.AppsV1Api(api_client)


def recap(output: str) -> dict[str, int]:
    match = RECAP.search(output)
    assert match, f"no PLAY RECAP for localhost in:\n{output[-3000:]}"
    ok, changed, unreachable, failed = map(int, match.groups())
    return {"ok": ok, "changed": changed, "unreachable": unreachable, "failed": failed}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    inst = Installed(tmp_path_factory.mktemp(f"tarball-{WORKER}"))
    dist = inst.root / "dist"
    subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True, cwd=inst.root)
    (tarball,) = dist.glob("interference-orchestrator-*.tar.gz")
    inst.collections.mkdir()
    inst.work.mkdir()
    inst.empty_tools.mkdir()
    # The dependencies (kubernetes.core, community.docker, community.general) come
    # with the `ansible` package; Galaxy is not reachable from CI.
    inst.run(str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "--offline",
             "-p", str(inst.collections), str(tarball))
    assert (inst.path / "MANIFEST.json").is_file()
    assert not (inst.path / ".cache").exists() and not (inst.path / "group_vars").exists()
    (inst.work / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))
    group_vars = inst.work / "group_vars" / "all"
    group_vars.mkdir(parents=True)
    (group_vars / "apps.yml").write_text(yaml.safe_dump({"apps": [APP]}))
    (group_vars / "cluster.yml").write_text(yaml.safe_dump({
        "cluster_name": CLUSTER, "cluster_workers": 2, "kwok_cluster_user_kubeconfig": "", "apps_wait_timeout": 120,
        "kwok_cluster_create_lock": str(inst.create_lock)}))
    try:
        yield inst
    finally:
        subprocess.run([str(tools_bin() / "kwokctl"), "delete", "cluster", "--name", CLUSTER],
                       env={**os.environ, "KWOK_WORKDIR": str(inst.kwok_workdir)}, capture_output=True, check=False)
        shutil.rmtree(inst.kwok_workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def first_run(installed: Installed) -> subprocess.CompletedProcess[str]:
    return installed.playbook("site")


def test_site_by_fqcn_places_exactly_the_inventorys_one_app_and_it_runs(
    installed: Installed, first_run: subprocess.CompletedProcess[str]
) -> None:
    # The tools folder is empty: every tool came from PATH.
    assert recap(first_run.stdout)["failed"] == 0
    assert list(installed.empty_tools.iterdir()) == []
    core, apps = installed.api()
    deployments = apps.list_namespaced_deployment(NAMESPACE).items
    assert [d.metadata.name for d in deployments] == [APP["name"]]
    assert deployments[0].status.ready_replicas == 1
    pods = core.list_namespaced_pod(NAMESPACE).items
    assert [(p.metadata.labels["app.kubernetes.io/name"], p.status.phase) for p in pods] == [(APP["name"], "Running")]
    # The placement table names the app and the worker it went to.
    assert re.search(rf"{APP['name']}\s.*{CLUSTER}-worker", first_run.stdout), first_run.stdout[-3000:]


def test_the_running_cluster_does_not_hold_the_creation_lock(
    installed: Installed, first_run: subprocess.CompletedProcess[str]
) -> None:
    """The lock covers `kwokctl create` only: the components it leaves running must not inherit it, or every
    later creation on the machine (the second run's, another checkout's) waits until this cluster is deleted."""
    assert recap(first_run.stdout)["failed"] == 0
    # The lock is machine-wide: another test's creation may hold it for a few seconds, this cluster's components
    # would hold it as long as the cluster runs.
    deadline = time.monotonic() + 300
    with installed.create_lock.open("a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, f"{installed.create_lock} held for 300 s while {CLUSTER} runs"
                time.sleep(1)
        fcntl.flock(lock, fcntl.LOCK_UN)


def test_a_second_run_changes_nothing(installed: Installed, first_run: subprocess.CompletedProcess[str]) -> None:
    assert recap(installed.playbook("site").stdout)["changed"] == 0


def test_outputs_go_to_the_working_folder_and_teardown_leaves_the_collection_unmodified(
    installed: Installed, first_run: subprocess.CompletedProcess[str]
) -> None:
    # One policy, one repeat, one attempt: the shortest experiment (its Jobs "finish" on kwok, with no logs to
    # read, so a second attempt would fail the same way; test_experiment_retry_kwok.py runs it).
    experiment = installed.playbook("experiment", "-e", '{"experiment_policies": ["engine"]}',
                                    "-e", "experiment_repeats=1", "-e", "experiment_job_timeout=60",
                                    "-e", "experiment_round_attempts=1", check=False)
    runs = list((installed.work / "interference-output" / "experiments").glob("*"))
    assert len(runs) == 1, f"no run folder under the working folder:\n{experiment.stdout[-3000:]}"
    teardown = installed.playbook("teardown")
    assert recap(teardown.stdout)["failed"] == 0
    assert not (installed.kwok_workdir / "clusters" / CLUSTER).exists()
    verify = installed.run(str(VENV_BIN / "ansible-galaxy"), "collection", "verify", "--offline",
                           "-p", str(installed.collections), "interference.orchestrator", check=False)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "Successfully verified that checksums for 'interference.orchestrator:" in verify.stdout, verify.stdout

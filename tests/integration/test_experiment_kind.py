"""The experiment and the profiling on a real kind cluster (short configuration).

Creates its own kind cluster through site.yml (cluster_name exp-<checkout hash>, offline
images, isolated workers), runs playbooks/experiment.yml and
playbooks/profile.yml with one repeat at RUN_BENCHMARK_SCALE=1, checks what
they wrote, and deletes the cluster. Needs a Docker engine and the tools
`make tools` builds; skipped with the reason when either is missing. Takes
several minutes: the workloads really run. KIND_NODE_IMAGE names a node
image to use instead of the one the kind_cluster role builds.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.docker import docker_answers
from tests.support.kwok import free_port
from tests.support.tools import tools_bin

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
TOOLS_BIN = tools_bin()
# One name per checkout (worktrees may test at once).
CLUSTER = "exp-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:6]
POLICIES = ["engine", "alternating", "scheduler", "worst"]
# The short configuration CI runs: the three quick workloads (the 7-Zip
# benchmark alone takes tens of seconds here), one CPU-heavy and two
# memory-heavy, so the same-type policy has a pair to put together.
SHORT_APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
    {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
]


pytestmark = [
    pytest.mark.cluster,
    pytest.mark.kind,
    pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers (`docker info`): kind cannot run"),
    pytest.mark.skipif(not (TOOLS_BIN / "kind").exists(), reason=f"no kind in {TOOLS_BIN}: run `make tools` first"),
]


def playbook(env: dict[str, str], path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    # Later -e wins: the short app list first, so a test's own apps replace it.
    short = [] if path == "site.yml" else ["-e", json.dumps({"apps": SHORT_APPS})]
    args = [str(VENV_BIN / "ansible-playbook"), path, "-e", "cluster_provider=kind", "-e", f"cluster_name={CLUSTER}",
            "-e", "image_source=offline", *short, *extra]
    # A node image built beforehand (e.g. by CI) instead of the one the kind_cluster role would build.
    if os.environ.get("KIND_NODE_IMAGE"):
        args += ["-e", f"kind_cluster_node_image={os.environ['KIND_NODE_IMAGE']}"]
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)


def tail(run: subprocess.CompletedProcess[str]) -> str:
    return (run.stdout + run.stderr)[-6000:]


# A cluster of its own, not the kind tier's shared one (tests/support/kind.py):
# the experiment needs its workers on disjoint CPU sets (kind_cluster's isolation
# layout, set when the nodes are made), and it proves teardown.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    home = tmp_path_factory.mktemp("kind")
    env = {
        **os.environ,
        "PATH": f"{TOOLS_BIN}:{VENV_BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "KUBECONFIG": str(home / "kubeconfig"),
    }
    try:
        # Monitoring is skipped, but kind still publishes Grafana's and Prometheus' host ports:
        # 3000 and 9090 may belong to another cluster or a local Prometheus (a CI run beside
        # another run of this suite on one host failed on "Bind for 127.0.0.1:9090").
        ports = ["-e", f"grafana_host_port={free_port()}", "-e", f"prometheus_host_port={free_port()}"]
        created = playbook(env, "site.yml", "--skip-tags", "monitoring,extender", *ports)
        assert created.returncode == 0, tail(created)
        yield env
    finally:
        playbook(env, "playbooks/teardown.yml")


def read_run(root: Path) -> tuple[dict[str, Any], Path]:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir()]
    return json.loads((run_dir / "results.json").read_text()), run_dir


def test_experiment_measures_every_app_under_every_policy_with_real_figures(
    cluster: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "experiments"
    run = playbook(cluster, "playbooks/experiment.yml", "-e", "experiment_repeats=1", "-e", "experiment_scale=1",
                   "-e", json.dumps({"experiment_app_scales": {"mbw": 2}}), "-e", f"experiment_output_root={out}")
    assert run.returncode == 0, tail(run)
    results, run_dir = read_run(out)
    # A per-app scale reaches that app's container only: mbw copies 40 x scale times, a line each.
    assert results["config"]["app_scales"] == {"c-ray": 1, "mbw": 2, "stressapptest": 1}
    for record in results["runs"]:
        if record["app"] == "mbw" and record["status"] == "succeeded":
            assert record["scale"] == 2
            assert sum(1 for line in record["log"].splitlines() if line.split("\t")[0].isdigit()) == 80, record["log"]
    apps = [app["name"] for app in results["apps"]]
    # A round in which a run failed runs again (experiment_round_attempts, 2 by default): its first
    # attempt stays in results.json, superseded, with the reason, and is said in the warnings summary.
    superseded = [r for r in results["runs"] if r["superseded"]]
    for record in superseded:
        assert record["attempt"] == 1, record
        assert any(r["round"] == record["round"] and r["attempt"] == 2 for r in results["runs"]), record
    if superseded:
        warnings.warn("experiment: rounds run again: " + "; ".join(
            str(r["error"]) for r in superseded if r["status"] == "failed"), stacklevel=1)
    runs = [r for r in results["runs"] if not r["superseded"]]
    # One run per app, policy and repeat, each with the figure its Job printed.
    keys = sorted((r["policy"], r["app"], r["repeat"]) for r in runs)
    assert keys == sorted((p, a, 0) for p in ["baseline", *POLICIES] for a in apps)
    assert [r for r in runs if r["status"] != "succeeded"] == []
    assert all(r["result"]["value"] > 0 and r["result"]["wall_seconds"] > 0 for r in runs)
    assert all(r["log"].count("RESULT ") == 1 for r in runs)
    # Pinned policies ran where they were planned.
    assert all(r["node"] == r["planned_node"] for r in runs if r["planned_node"])
    assert (run_dir / "slowdown.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| worst |" in (run_dir / "report.md").read_text()


def test_workers_are_isolated_on_disjoint_cpus(cluster: dict[str, str]) -> None:
    nodes = json.loads(subprocess.run(
        ["kubectl", "--context", f"kind-{CLUSTER}", "get", "nodes", "-l", "group", "-o", "json"],
        env=cluster, capture_output=True, text=True, check=True).stdout)["items"]
    cpus = int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)
    if cpus < len(nodes):
        pytest.skip(f"{cpus} CPUs for {len(nodes)} workers: isolation is off by design")
    allocatable = {n["metadata"]["name"]: n["status"]["allocatable"]["cpu"] for n in nodes}
    assert set(allocatable.values()) == {str(cpus // len(nodes))}


def test_profile_writes_measured_profiles_with_a_fit_error(cluster: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "profiles"
    target = tmp_path / "measured_profiles.yml"
    run = playbook(cluster, "playbooks/profile.yml", "-e", "experiment_repeats=1", "-e", "experiment_scale=1",
                   "-e", f"experiment_output_root={out}", "-e", f"profile_output={target}")
    assert run.returncode == 0, tail(run)
    results, run_dir = read_run(out)
    apps = [app["name"] for app in results["apps"]]
    pairs = [r for r in results["runs"] if r["policy"] == "pair" and not r["superseded"]]
    assert len(pairs) == len(apps) * (len(apps) - 1)
    measured = yaml.safe_load(target.read_text())["measured_profiles"]
    assert set(measured) == set(apps)
    assert "Fit error: RMSE" in (run_dir / "report.md").read_text()


def test_an_image_without_run_benchmark_fails_before_any_job_with_the_app_name(
    cluster: dict[str, str], tmp_path: Path
) -> None:
    # The node image is local for as long as the cluster lives, and runs no benchmark.
    node_image = subprocess.run(["docker", "inspect", f"{CLUSTER}-worker", "--format", "{{.Config.Image}}"],
                                capture_output=True, text=True, check=True).stdout.strip()
    apps = [{"name": "no-benchmark", "image": node_image, "type": "cpu"}]
    vars_file = tmp_path / "apps.json"
    vars_file.write_text(json.dumps({"apps": apps, "experiment_policies": ["baseline"]}))
    run = playbook(cluster, "playbooks/experiment.yml", "-e", f"@{vars_file}",
                   "-e", f"experiment_output_root={tmp_path / 'out'}")
    assert run.returncode != 0
    assert "no-benchmark" in run.stdout and "run-benchmark" in run.stdout
    jobs = subprocess.run(
        ["kubectl", "--context", f"kind-{CLUSTER}", "get", "jobs", "-A", "-l", "interference.orchestrator/experiment",
         "-o", "name"], env=cluster, capture_output=True, text=True, check=True)
    assert jobs.stdout.strip() == ""

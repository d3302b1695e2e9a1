"""The interference probe in a real kind cluster, built offline: what a stressor does to it.

Creates its own kind cluster through site.yml (cluster_name mon-probe-<xdist
worker>, one control plane and two isolated workers, image_source offline:
the node image, the workload images, the offline monitoring chart with the
probe at a 5 s interval), then runs playbooks/isolation.yml with a CPU and a
memory-bandwidth stressor on each worker in turn, and reads its results.json.

The recovery of a helm install killed midway (pending-install) ran here too
until 2026-12-03 (CI's serial quiet step: 8 min 56 s with it, 7 min 28 s without, cold); it is a task file's
branch, not a measurement, and runs on kwok now
(tests/integration/test_helm_pending_kwok.py, with a check on the files that
every install of the role calls it first: tests/unit/test_monitoring_pending_guard.py).

What it shows:

- a CPU stressor on a worker raises that worker's CPU pressure clearly above
  the other's, within two probe intervals (read from the probe round that
  measured it, so scrape and query delays do not count);
- a memory-bandwidth stressor, itself a busy thread, raises the CPU pressure
  of its own worker clearly above that worker's baseline, and above the idle
  neighbour's: the stressor shares its worker's CPU, the neighbour does not.
  Not claimed: a clear margin over the neighbour, nor that the neighbour's CPU
  share stays where it was. On a quiet machine the neighbour read 0.14 and
  0.05 against its own worker's 0.80 and 0.83; in CI's quiet step it read 0.19
  (stop 28) and then 0.47 against 0.69 (stop 30), from idle baselines of 0;
  alone on this machine again, 0.19 and 0.30 against 0.84 and 0.82
  (2026-12-02). On 2 cores, whatever else the host runs (the control plane,
  Prometheus, dockerd, kernel threads, the test itself) is not pinned, and
  with one CPU taken by the stressor it can only run on the neighbour's; that
  is the likeliest cause, not a measured one. Nor that it moves the memory
  signal (an xfail below): the workers share one host's memory bus, so
  "another node" does not isolate memory bandwidth here.

Every measured figure is printed (pytest -s, or in the failure message), so
what the physics did is on record even when an assertion fails. Deletes the
cluster at the end. Needs a Docker engine and kind in .cache/bin.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import matrices

from .test_experiment_kind import TOOLS_BIN, VENV_BIN, docker_answers, free_port, tail

REPO = Path(__file__).resolve().parents[2]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
CLUSTER = f"mon-probe-{WORKER}"
# The probe's interval here (shorter than the default 10 s, to keep the test short); Prometheus scrapes as often.
INTERVAL_S = 5
# "Clearly above": the stressed worker's mean CPU pressure exceeds the other's by this much.
CLEAR_MARGIN = 0.3
# "Moved" (the memory signal's xfail): a rise above the baseline by more than this.
MOVED = 0.15

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.kind,
    # Its figures are the machine's load as much as the stressor's: measured with nothing else running.
    pytest.mark.quiet,
    # Its fixture makes the cluster and measures: the kind budget (conftest's KIND_TIMEOUT) covers both.
    pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers (`docker info`): kind cannot run"),
    pytest.mark.skipif(not (TOOLS_BIN / "kind").exists(), reason="no kind in .cache/bin: run `make tools` first"),
]


def playbook_args(path: str, *extra: str) -> list[str]:
    args = [str(VENV_BIN / "ansible-playbook"), path, "-e", "cluster_provider=kind", "-e", f"cluster_name={CLUSTER}",
            "-e", "image_source=offline", "-e", "cluster_workers=2", *extra]
    if os.environ.get("KIND_NODE_IMAGE"):
        args += ["-e", f"kind_cluster_node_image={os.environ['KIND_NODE_IMAGE']}"]
    return args


def playbook(env: dict[str, str], path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(playbook_args(path, *extra), cwd=REPO, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def isolation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("mon-kind")
    env = {
        **os.environ,
        "PATH": f"{TOOLS_BIN}:{VENV_BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "KUBECONFIG": str(home / "kubeconfig"),
    }
    prometheus_port = free_port()
    ports = ["-e", f"grafana_host_port={free_port()}", "-e", f"prometheus_host_port={prometheus_port}"]
    stages = ["--tags", "cluster,labels,monitoring,images", *ports, "-e", f"monitoring_probe_interval={INTERVAL_S}s",
              "-e", f"monitoring_offline_scrape_interval={INTERVAL_S}s"]
    try:
        created = playbook(env, "site.yml", *stages)
        assert created.returncode == 0, tail(created)
        stressors = {"cpu": ["bash", "-c", "while :; do :; done"],
                     "memory_bandwidth": ["mbw", "-q", "-t0", "-n", "100000000", "256"]}
        settings = {"isolation_stressors": stressors, "isolation_output_root": str(home / "out"),
                    "isolation_stress_s": 30, "isolation_warmup_s": 2 * INTERVAL_S,
                    "isolation_settle_s": 2 * INTERVAL_S, "isolation_step_s": INTERVAL_S}
        measured = playbook(env, "playbooks/isolation.yml", *ports, "-e", json.dumps(settings))
        assert measured.returncode == 0, tail(measured)
        (results_file,) = (home / "out").glob("*/results.json")
        results = json.loads(results_file.read_text())
        computed = matrices(results)
        shown = ("matrix", "baseline", "first_rise_s", "first_rise_round_s", "shares")
        print(json.dumps({k: computed[k] for k in shown},
                         indent=1))
        yield {"results": results, "computed": computed, "dir": results_file.parent}
    finally:
        subprocess.run([str(VENV_BIN / "ansible-playbook"), "playbooks/teardown.yml", "-e", "cluster_provider=kind",
                        "-e", f"cluster_name={CLUSTER}"], cwd=REPO, env=env, capture_output=True, check=False)


def test_a_cpu_stressor_raises_its_workers_cpu_pressure_clearly_above_the_other_within_two_intervals(
    isolation: dict[str, Any],
) -> None:
    computed = isolation["computed"]
    failed = []
    for stressed, row in computed["matrix"]["cpu"].items():
        (other,) = [n for n in computed["nodes"] if n != stressed]
        rise = computed["first_rise_round_s"]["cpu"][stressed]
        print(f"CPU stressor on {stressed}: CPU pressure {row[stressed]:.3f} there, {row[other]:.3f} on {other}; "
              f"first rise after {rise} s")
        if row[stressed] < row[other] + CLEAR_MARGIN or rise is None or rise > 2 * INTERVAL_S:
            failed.append((stressed, computed["matrix"]["cpu"], rise, computed["first_rise_s"]["cpu"]))
    assert not failed, failed


def test_a_memory_stressor_raises_the_cpu_pressure_of_its_own_worker_above_the_idle_neighbours(
    isolation: dict[str, Any],
) -> None:
    """Own worker: a clear rise over its baseline; the neighbour: printed, and only ranked below.

    Every direction is measured and printed before any is asserted, so one failure
    still leaves all the figures on record.
    """
    computed = isolation["computed"]
    baseline = computed["baseline"]
    failed = []
    for stressed, observed in computed["response"]["memory_bandwidth"].items():
        (neighbour,) = [n for n in computed["nodes"] if n != stressed]
        own, theirs = observed[stressed]["cpu"], observed[neighbour]["cpu"]
        print(f"memory stressor on {stressed}: CPU pressure {own:.3f} there (its baseline "
              f"{baseline[stressed]['cpu']:.3f}), {theirs:.3f} on {neighbour} (its baseline "
              f"{baseline[neighbour]['cpu']:.3f})")
        if own < baseline[stressed]["cpu"] + CLEAR_MARGIN or own <= theirs:
            failed.append((stressed, neighbour, observed, baseline))
    assert not failed, failed


# Not shown by this testbed, so not claimed: the memory signal moved by 0.24 on a quiet machine
# (docs/monitoring/isolation-kind-2026-12-01-quiet/), but by 0.11 in CI's quiet step and by 0.06
# beside busy workers (2026-12-01), with idle baselines up to 0.17: within the host's noise.
@pytest.mark.xfail(reason="the memory-bandwidth signal is within this host's noise (0.06 to 0.24 measured)",
                   strict=False)
def test_a_memory_stressor_moves_the_memory_signal(isolation: dict[str, Any]) -> None:
    computed = isolation["computed"]
    baseline = computed["baseline"]
    for stressed, observed in computed["response"]["memory_bandwidth"].items():
        moved = max(observed[n]["memory_bandwidth"] - baseline[n]["memory_bandwidth"] for n in computed["nodes"])
        assert moved > MOVED, (stressed, observed, baseline)


def test_the_report_and_heatmap_are_written_beside_results_json(isolation: dict[str, Any]) -> None:
    run_dir: Path = isolation["dir"]
    report = (run_dir / "report.md").read_text()
    assert "## Stressor `cpu`" in report
    # The shares the placement's sharing option takes, one row per stressor, computed from results.json.
    shares = isolation["computed"]["shares"]
    assert "## Shares across workers" in report
    for resource, share in shares.items():
        assert share is None or 0 <= share <= 1, shares
        cell = "-" if share is None else f"{share:.2f}"
        assert f"| {resource} | {cell} |" in report, (resource, report)
    assert (run_dir / "heatmap.png").read_bytes().startswith(b"\x89PNG")

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

Then, on the same cluster, playbooks/observe.yml observes the four workloads
and `burner` (declared `memory`, its command a busy loop) alone on one worker,
2 repeats of 25 s (about 7 minutes), and shows:

- the profiles file holds every app's profile, spread and repeats, and the
  report names each app's class;
- every workload takes the CPU share of a newcomer on its worker;
- `burner` is observed CPU-dominant, and with `profile_from: observed`
  site.yml places it beside mbw instead of c-ray (each pinned to a worker),
  with PROFILE `observed` in the placement table; without an observed
  profile it keeps its declared one and the run says so.
- Not shown here (an xfail that prints the classes): mbw and stressapptest
  coming out memory-dominant. The memory-side signals stay within this host's
  noise (docs/monitoring.md, "Observed profiles").

Last, on the same cluster, playbooks/rebalance.yml: two busy loops, one
declared `cpu` and one `memory`, pinned together on one worker by `node:`
pins, then given without the pins. The check run names one move and changes
nothing, and with a PodDisruptionBudget on one of them names the other;
settings out of range are refused. A run killed once the moving app's new
pod exists leaves the rollout to the Deployment controller: sampled until it
settles, neither app is ever without a running replica, and the move
completes; a rerun stops on the killed run's lock, and one that breaks it
converges with nothing to move. Pinned together again, the run moves exactly
one of them to the other worker (a rolling update, verified, then site.yml's
strategy back: site.yml with the declared apps then changes nothing), reads
both as CPU-dominant from Prometheus (the one declared `memory` too) and
writes results.json and a report with the pressure before and after; a
second run moves nothing and changes nothing;
a Prometheus that does not answer fails the run, naming its URL, with
nothing moved.

Every measured figure is printed (pytest -s, or in the failure message), so
what the physics did is on record even when an assertion fails. Deletes the
cluster at the end. Needs a Docker engine and kind in .cache/bin.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import APP_LABEL
from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import matrices
from ansible_collections.interference.orchestrator.plugins.plugin_utils.observed import observed_profiles

from tests.support.processes import kill_tree

from .test_experiment_kind import TOOLS_BIN, VENV_BIN, docker_answers, free_port, tail

REPO = Path(__file__).resolve().parents[2]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
CLUSTER = f"mon-probe-{WORKER}"
WORKERS = [f"{CLUSTER}-worker", f"{CLUSTER}-worker2"]
# The probe's interval here (shorter than the default 10 s, to keep the test short); Prometheus scrapes as often.
INTERVAL_S = 5
# "Clearly above": the stressed worker's mean CPU pressure exceeds the other's by this much.
CLEAR_MARGIN = 0.3
# "Moved" (the memory signal's xfail): a rise above the baseline by more than this.
MOVED = 0.15
# A workload "takes the CPU share of a newcomer": its observed cpu pressure (median over repeats) reaches this.
BUSY = 0.2

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
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The kind cluster with the offline monitoring chart and the probe, deleted at the end of the module."""
    home = tmp_path_factory.mktemp("mon-kind")
    env = {
        **os.environ,
        "PATH": f"{TOOLS_BIN}:{VENV_BIN}:{os.environ.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "KUBECONFIG": str(home / "kubeconfig"),
    }
    ports = ["-e", f"grafana_host_port={free_port()}", "-e", f"prometheus_host_port={free_port()}"]
    stages = ["--tags", "cluster,labels,monitoring,images", *ports, "-e", f"monitoring_probe_interval={INTERVAL_S}s",
              "-e", f"monitoring_offline_scrape_interval={INTERVAL_S}s"]
    teardown = [str(VENV_BIN / "ansible-playbook"), "playbooks/teardown.yml", "-e", "cluster_provider=kind",
                "-e", f"cluster_name={CLUSTER}"]
    # A cluster of this name left by an interrupted run would be reused, with the host ports it was created
    # with, not these: Prometheus then never answers on the new port (seen 2026-12-07 after a killed run).
    subprocess.run(teardown, cwd=REPO, env=env, capture_output=True, check=True)
    try:
        created = playbook(env, "site.yml", *stages)
        assert created.returncode == 0, tail(created)
        yield {"env": env, "home": home, "ports": ports}
    finally:
        subprocess.run(teardown, cwd=REPO, env=env, capture_output=True, check=False)


@pytest.fixture(scope="module")
def isolation(cluster: dict[str, Any]) -> dict[str, Any]:
    home: Path = cluster["home"]
    stressors = {"cpu": ["bash", "-c", "while :; do :; done"],
                 "memory_bandwidth": ["mbw", "-q", "-t0", "-n", "100000000", "256"]}
    settings = {"isolation_stressors": stressors, "isolation_output_root": str(home / "out"),
                "isolation_stress_s": 30, "isolation_warmup_s": 2 * INTERVAL_S,
                "isolation_settle_s": 2 * INTERVAL_S, "isolation_step_s": INTERVAL_S}
    measured = playbook(cluster["env"], "playbooks/isolation.yml", *cluster["ports"], "-e", json.dumps(settings))
    assert measured.returncode == 0, tail(measured)
    (results_file,) = (home / "out").glob("*/results.json")
    results = json.loads(results_file.read_text())
    computed = matrices(results)
    shown = ("matrix", "baseline", "first_rise_s", "first_rise_round_s", "shares")
    print(json.dumps({k: computed[k] for k in shown},
                     indent=1))
    return {"results": results, "computed": computed, "dir": results_file.parent}


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


# Observed profiles (playbooks/observe.yml) on the same cluster: the four workloads as
# the example inventory declares them, and an app declared `memory` whose command burns CPU.
OBSERVED_APPS: list[dict[str, Any]] = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
    {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
    {"name": "burner", "image": "pts/mbw", "type": "memory", "command": ["bash", "-c", "while :; do :; done"]},
]


@pytest.fixture(scope="module")
def observed(cluster: dict[str, Any], isolation: dict[str, Any]) -> dict[str, Any]:
    """observe.yml's profiles (after the isolation run: one measurement at a time), as results.json and the file."""
    out = cluster["home"] / "observe"
    settings = {"apps": OBSERVED_APPS, "interference_output_dir": str(out), "isolation_stress_s": 25,
                "isolation_warmup_s": 2 * INTERVAL_S, "isolation_settle_s": 0, "isolation_step_s": INTERVAL_S,
                "isolation_observe_repeats_min": 2, "isolation_observe_repeats_max": 2}
    run = playbook(cluster["env"], "playbooks/observe.yml", *cluster["ports"], "-e", json.dumps(settings))
    assert run.returncode == 0, tail(run)
    (results_file,) = (out / "observe").glob("*/results.json")
    computed = observed_profiles(json.loads(results_file.read_text()))
    print(json.dumps({app: {k: e[k] for k in ("class", "profile", "spread", "rises")}
                      for app, e in computed["apps"].items()}, indent=1))
    written = yaml.safe_load((out / "observed_profiles.yml").read_text())
    return {"computed": computed, "file": out / "observed_profiles.yml", "written": written,
            "report": (results_file.parent / "report.md").read_text()}


def test_observed_profiles_are_written_with_their_spread_and_repeats(observed: dict[str, Any]) -> None:
    computed, written = observed["computed"], observed["written"]
    assert set(written["observed_profiles"]) == {app["name"] for app in OBSERVED_APPS}
    for app, entry in computed["apps"].items():
        assert entry["repeats"] == 2, (app, entry)
        assert written["observed_profiles_detail"][app] == {
            "spread": entry["spread"], "repeats": 2, "class": entry["class"]}
        assert f"| {app} | {entry['class']} |" in observed["report"]


def test_every_workload_takes_the_cpu_share_of_a_newcomer_on_its_worker(observed: dict[str, Any]) -> None:
    apps = observed["computed"]["apps"]
    busy = {app: apps[app]["profile"]["cpu"] for app in ("c-ray", "compress-7zip", "mbw", "stressapptest")}
    print(busy)
    assert all(cpu >= BUSY for cpu in busy.values()), apps


# What the Done-when of "placement from monitoring" asks, and this testbed does not show: on 1-CPU
# kind workers every busy app's largest pressure is the CPU share it takes (0.82 for each, set by
# the CPU requests' ratio), and the llc / memory_bandwidth signals moved by at most about 0.2 for
# mbw and a busy loop alike (2026-12-06: mbw llc 0.14, burner llc 0.12, spreads 0.09-0.13 over 3
# repeats; an mbw over 256 MiB on one worker moved the other's memory signal by 0.00-0.09).
@pytest.mark.xfail(reason="the memory-side signals are within this host's noise: every workload is CPU-dominant here",
                   strict=False)
def test_observed_profiles_class_the_cpu_workloads_cpu_and_the_memory_workloads_memory(
    observed: dict[str, Any],
) -> None:
    classes = {app: entry["class"] for app, entry in observed["computed"]["apps"].items()}
    print(classes)
    assert [classes[a] for a in ("c-ray", "compress-7zip", "mbw", "stressapptest")] == [
        "cpu", "cpu", "memory", "memory"], observed["computed"]["apps"]


def test_an_app_declared_memory_that_burns_cpu_is_observed_cpu_and_placed_apart_from_cpu_apps(
    cluster: dict[str, Any], observed: dict[str, Any],
) -> None:
    """c-ray (cpu) pinned to one worker, mbw (memory) to the other: declared, `burner` (memory) joins c-ray;
    observed (CPU-bound), it joins mbw, and the placement table says where its profile came from."""
    assert observed["computed"]["apps"]["burner"]["class"] == "cpu", observed["computed"]["apps"]["burner"]
    first, second = WORKERS
    apps = [{**OBSERVED_APPS[0], "node": first}, {**OBSERVED_APPS[2], "node": second},
            {**OBSERVED_APPS[4], "profile_from": "observed"}]
    declared = plan_apps([{k: v for k, v in a.items() if k != "profile_from"} for a in apps], WORKERS)
    assert {e["name"]: e["nodes"] for e in declared["apps"]}["burner"] == [first], declared["apps"]
    run = playbook(cluster["env"], "site.yml", "--tags", "apps", *cluster["ports"], "-e", f"@{observed['file']}",
                   "-e", json.dumps({"apps": apps}))
    assert run.returncode == 0, tail(run)
    assert re.search(r"burner\s+memory\s+observed\s+" + re.escape(second), run.stdout), tail(run)
    pods = subprocess.run([str(TOOLS_BIN / "kubectl"), "get", "pods", "-n", "interference-apps", "-o", "json"],
                          env=cluster["env"], capture_output=True, text=True, check=True)
    node_of = {p["metadata"]["labels"][APP_LABEL]: p["spec"].get("nodeName") for p in json.loads(pods.stdout)["items"]}
    print(node_of)
    assert node_of == {"c-ray": first, "mbw": second, "burner": second}, node_of
    # Without an observed profile for it, burner keeps its declared one, and the run says so (a check run).
    check = playbook(cluster["env"], "site.yml", "--tags", "apps", "--check", *cluster["ports"],
                     "-e", json.dumps({"apps": apps, "observed_profiles": {}}))
    assert check.returncode == 0, tail(check)
    assert "burner: profile_from observed, but no observed profile for it" in check.stdout, tail(check)
    assert re.search(r"burner\s+memory\s+declared \(no observed\)\s+", check.stdout), tail(check)


SPIN = ["bash", "-c", "while :; do :; done"]
# The rebalance's window here: a few probe intervals (INTERVAL_S), short to keep the test short.
REBALANCE_WINDOW_S = 30


def apps_object(env: dict[str, str], *what: str) -> Any:
    """`kubectl get <what> -n interference-apps -o json`, parsed."""
    got = subprocess.run([str(TOOLS_BIN / "kubectl"), "get", *what, "-n", "interference-apps", "-o", "json"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(got.stdout)


def live_pods(env: dict[str, str]) -> list[dict[str, Any]]:
    """The app pods not being deleted."""
    return [pod for pod in apps_object(env, "pods")["items"] if not pod["metadata"].get("deletionTimestamp")]


def running_replicas(env: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per app: the nodes of its Running pods not being deleted, and the nodes of all its pods not being deleted."""
    running: dict[str, list[str]] = {}
    present: dict[str, list[str]] = {}
    for pod in live_pods(env):
        app, node = pod["metadata"]["labels"][APP_LABEL], pod["spec"].get("nodeName") or ""
        present.setdefault(app, []).append(node)
        if pod["status"].get("phase") == "Running":
            running.setdefault(app, []).append(node)
    return running, present


def interrupted_mid_move(cluster: dict[str, Any], settings: dict[str, Any], target: str) -> list[dict[str, list[str]]]:
    """Run the rebalance, kill it (and its children) once a pod of the moving app exists on `target`, and
    sample the running replicas until the rollout the run started has settled; returns every sample."""
    log = cluster["home"] / "interrupted-rebalance.log"
    with log.open("w") as out:
        run = subprocess.Popen(playbook_args("playbooks/rebalance.yml", *cluster["ports"], "-e", json.dumps(settings)),
                               cwd=REPO, env=cluster["env"], stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    samples: list[dict[str, list[str]]] = []
    try:
        deadline = time.monotonic() + 600
        while True:
            running, present = running_replicas(cluster["env"])
            samples.append(running)
            if any(target in nodes for nodes in present.values()):
                break
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        # The whole tree: Mitogen's multiplexer leaves the run's process group (processes.py).
        kill_tree(run.pid)
        run.wait()
    deadline = time.monotonic() + 300
    while True:
        running, present = running_replicas(cluster["env"])
        samples.append(running)
        if all(len(nodes) == 1 for nodes in present.values()) and running == present:
            return samples
        assert time.monotonic() < deadline, (present, running)
        time.sleep(0.5)


def pod_uids(env: dict[str, str]) -> set[str]:
    """The UIDs of the app pods not being deleted: a restarted pod has a new one."""
    return {pod["metadata"]["uid"] for pod in live_pods(env)}


def node_of_apps(env: dict[str, str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pod in live_pods(env):
        found.setdefault(pod["metadata"]["labels"][APP_LABEL], []).append(pod["spec"].get("nodeName"))
    return {app: sorted(nodes) for app, nodes in sorted(found.items())}


def flat(stdout: str) -> str:
    """The output with every run of whitespace made one space: the YAML callback folds long messages."""
    return " ".join(stdout.split())


def recap_changed(stdout: str) -> int:
    found = re.search(r"localhost\s+:\s+ok=\d+\s+changed=(\d+)", stdout)
    assert found, stdout[-2000:]
    return int(found.group(1))


def test_rebalance_separates_two_busy_apps_pinned_together_by_exactly_one_move_and_then_moves_nothing(
    cluster: dict[str, Any],
) -> None:
    first, second = WORKERS
    # With CPU requests: the probe's share of a busy CPU follows the ratio of the requests (its own is 100m), so
    # two BestEffort busy loops would leave it nearly all of it (0.03 pressure measured for each, 2026-12-07).
    # With limits of half a CPU: together they fill their 1-CPU worker as before, but apart (once moved) they
    # leave the host a CPU. Unlimited, the two apart burnt both of its cores, and the next ansible-playbook's
    # Mitogen interpreter missed its fixed 30 s start-up deadline on a CI machine ("Connection timed out").
    resources = {"requests": {"cpu": "300m"}, "limits": {"cpu": "500m"}}
    apps = [{"name": "spin-cpu", "image": "pts/mbw", "type": "cpu", "command": SPIN, "resources": resources},
            {"name": "spin-memory", "image": "pts/mbw", "type": "memory", "command": SPIN, "resources": resources}]
    out = cluster["home"] / "rebalance-out"
    pinned = playbook(cluster["env"], "site.yml", "--tags", "apps", *cluster["ports"],
                      "-e", json.dumps({"apps": [{**app, "node": first} for app in apps]}))
    assert pinned.returncode == 0, tail(pinned)
    assert node_of_apps(cluster["env"]) == {"spin-cpu": [first], "spin-memory": [first]}
    # Declared, the two are compatible (cpu next to memory): site.yml alone would not separate them.
    declared = plan_apps(apps, WORKERS, previous={"spin-cpu": [first], "spin-memory": [first]})
    assert [e["nodes"] for e in declared["apps"]] == [[first], [first]], declared["apps"]
    # The window must hold the two running together from its start.
    time.sleep(REBALANCE_WINDOW_S + 2 * INTERVAL_S)
    settings = {"apps": apps, "apps_rebalance_window_s": REBALANCE_WINDOW_S, "interference_output_dir": str(out)}

    check = playbook(cluster["env"], "playbooks/rebalance.yml", "--check", *cluster["ports"],
                     "-e", json.dumps(settings))
    assert check.returncode == 0, tail(check)
    would = r"Would move: spin-(cpu|memory) " + re.escape(first) + " -> " + re.escape(second)
    assert re.search(would, flat(check.stdout)), tail(check)
    assert node_of_apps(cluster["env"]) == {"spin-cpu": [first], "spin-memory": [first]}
    assert not out.exists()
    # A PodDisruptionBudget that allows no disruption of spin-cpu holds it: the other one would move instead.
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "keep-spin-cpu", "namespace": "interference-apps"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {APP_LABEL: "spin-cpu"}}}}
    kubectl = [str(TOOLS_BIN / "kubectl"), "-n", "interference-apps"]
    subprocess.run([*kubectl, "apply", "-f", "-"], input=json.dumps(budget), env=cluster["env"], text=True,
                   capture_output=True, check=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and subprocess.run(
            [*kubectl, "get", "pdb", "keep-spin-cpu", "-o", "jsonpath={.status.observedGeneration}"],
            env=cluster["env"], capture_output=True, text=True, check=False).stdout.strip() != "1":
        time.sleep(2)
    held = playbook(cluster["env"], "playbooks/rebalance.yml", "--check", *cluster["ports"],
                    "-e", json.dumps(settings))
    subprocess.run([*kubectl, "delete", "pdb", "keep-spin-cpu"], env=cluster["env"], capture_output=True, check=True)
    assert held.returncode == 0, tail(held)
    assert f"Would move: spin-memory {first} -> {second}" in flat(held.stdout), tail(held)
    assert 'Held by a PodDisruptionBudget: {"spin-cpu": "keep-spin-cpu"}' in flat(held.stdout), tail(held)
    # Settings out of range are refused before anything is read.
    refused = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"],
                       "-e", json.dumps({**settings, "apps_rebalance_threshold": 2}))
    assert refused.returncode != 0
    assert "rebalance setting 'threshold': expected a number from 0 to 1, got 2" in flat(refused.stdout), tail(refused)

    # Killed mid-move, once the new pod of the moving app exists: the Deployment controller finishes the rolling
    # update the run started, and neither app is ever without a running replica. The killed run still holds the
    # lock: a rerun stops naming it, and a rerun that breaks it converges (nothing left to move).
    samples = interrupted_mid_move(cluster, settings, second)
    print(f"{len(samples)} samples of the running replicas while interrupted, the last: {samples[-1]}")
    assert all(sample.get(name) for sample in samples for name in ("spin-cpu", "spin-memory")), samples
    interrupted = node_of_apps(cluster["env"])
    assert sorted(nodes[0] for nodes in interrupted.values()) == [first, second], interrupted
    locked = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"], "-e", json.dumps(settings))
    assert locked.returncode != 0
    assert "Another run is placing the apps" in flat(locked.stdout), tail(locked)
    converged = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"],
                         "-e", json.dumps({**settings, "apps_lock_break": True}))
    assert converged.returncode == 0, tail(converged)
    assert "Moving: nothing" in flat(converged.stdout), tail(converged)
    assert node_of_apps(cluster["env"]) == interrupted
    assert not out.exists()

    # Pinned together again, for the run that moves and reports.
    repinned = playbook(cluster["env"], "site.yml", "--tags", "apps", *cluster["ports"],
                        "-e", json.dumps({"apps": [{**app, "node": first} for app in apps]}))
    assert repinned.returncode == 0, tail(repinned)
    assert node_of_apps(cluster["env"]) == {"spin-cpu": [first], "spin-memory": [first]}
    time.sleep(REBALANCE_WINDOW_S + 2 * INTERVAL_S)

    moved = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"], "-e", json.dumps(settings))
    assert moved.returncode == 0, tail(moved)
    placed = node_of_apps(cluster["env"])
    print(placed)
    assert sorted(nodes[0] for nodes in placed.values()) == [first, second], placed
    (results_file,) = (out / "rebalance").glob("*/results.json")
    results = json.loads(results_file.read_text())
    report = (results_file.parent / "report.md").read_text()
    print(report)
    assert len(results["plan"]["moves"]) == 1, results["plan"]
    assert results["plan"]["predicted_after"] < results["plan"]["predicted_before"], results["plan"]
    assert f"Hot nodes: {first}." in report
    # Both read CPU-dominant from Prometheus, the one declared memory too.
    for app in ("spin-cpu", "spin-memory"):
        assert re.search(rf"\| {app} \| {re.escape(first)} \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| cpu \|",
                         report), report
    assert results["after"] and results["after"]["answers"]["pressure_mean"]["status"] == "success"
    # The moved Deployment rolled (the interrupted run above shows how), then got site.yml's strategy back:
    # site.yml with the apps as declared leaves its spec alone (same generation) and restarts no pod. (The app
    # that stayed still carries the node it was pinned to above, so site.yml rewrites that one's annotation.)
    moved_app = results["plan"]["moves"][0]["app"]
    deployment = apps_object(cluster["env"], "deployment", moved_app)
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pods_before = pod_uids(cluster["env"])
    declared_site = playbook(cluster["env"], "site.yml", "--tags", "apps", *cluster["ports"],
                             "-e", json.dumps({"apps": apps}))
    assert declared_site.returncode == 0, tail(declared_site)
    after_site = apps_object(cluster["env"], "deployment", moved_app)
    assert after_site["metadata"]["generation"] == deployment["metadata"]["generation"], after_site["spec"]
    assert pod_uids(cluster["env"]) == pods_before
    assert node_of_apps(cluster["env"]) == placed

    again = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"], "-e", json.dumps(settings))
    assert again.returncode == 0, tail(again)
    hot = re.search(r"Hot nodes \([^)]*\): .*?\.(?= Moving:)", flat(again.stdout))
    print(hot.group(0) if hot else "no line names the hot nodes")
    assert "Moving: nothing" in flat(again.stdout), tail(again)
    assert recap_changed(again.stdout) == 0, tail(again)
    assert node_of_apps(cluster["env"]) == placed
    assert len(list((out / "rebalance").glob("*/results.json"))) == 1

    unreachable = playbook(cluster["env"], "playbooks/rebalance.yml", *cluster["ports"], "-e", json.dumps(
        {**settings, "apps_prometheus_url": f"http://localhost:{free_port()}", "apps_prometheus_wait_s": 5}))
    assert unreachable.returncode != 0
    assert "Prometheus did not answer at http://localhost:" in flat(unreachable.stdout), tail(unreachable)
    assert node_of_apps(cluster["env"]) == placed

#!/usr/bin/env python3
"""site.yml on kwok, and our placement against kube-scheduler's (figures for docs/kwok.md; not a test).

Parts (both by default, or name them):
  site     wall time of `ansible-playbook site.yml` (cluster_provider=kwok) for
           4 apps on 2 workers and 200 apps on 20 workers: the first run (it
           creates the kwok cluster) and the idempotent rerun.
  compare  on the 20-worker cluster, our 200 apps placed by site.yml; then,
           with those removed, the same 200 apps as plain Deployments in
           another namespace, without pinning, left to kube-scheduler with a
           *preferred* pod anti-affinity on interference.orchestrator/type
           (the native Kubernetes way to spread noisy neighbours). The total
           interference of each side is computed from the nodes the pods
           actually ran on, with the engine's `dot`, next to the engine's
           lower bound. Two request mixes: uniform and varied (make_apps).

Apps alternate `type: cpu` and `type: memory`; each worker has 8 CPU, 16Gi
and 110 pods.

Run: .venv/bin/python benchmarks/site_kwok.py [site] [compare] [--mix uniform|varied] [--keep]
(`make tools` first; the clusters are named bench-site-2w and bench-site-20w
and are deleted at the end unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import APP_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import TYPE_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    dot,
    interference_lower_bound,
    profile_for_type,
)
from kubernetes import client, config

from tests.support.tools import tools_bin

REPO = Path(__file__).resolve().parents[1]
TOOLS = tools_bin()
WORKDIR = Path(os.environ.get("KWOK_WORKDIR", "~/.kwok")).expanduser()
APPS_NAMESPACE = "interference-apps"
NATIVE_NAMESPACE = "bench-kube-scheduler"
SIZES = [(4, 2), (200, 20)]


def make_apps(count: int, mix: str = "uniform") -> list[dict[str, Any]]:
    """`count` apps alternating cpu and memory.

    uniform: every app requests 100m CPU and 128Mi. varied: requests drawn
    (seeded) from 100m..1000m CPU and 128Mi..2Gi, about two thirds of the
    20 workers' allocatable in all, so resource scoring has something to say.
    """
    rng = random.Random(7)
    apps = []
    for index in range(count):
        if mix == "varied":
            requests = {"cpu": f"{rng.randrange(100, 1001, 100)}m", "memory": f"{rng.randrange(128, 2049, 128)}Mi"}
        else:
            requests = {"cpu": "100m", "memory": "128Mi"}
        apps.append(
            {
                "name": f"app-{index:03d}",
                "image": "pts/c-ray" if index % 2 == 0 else "pts/mbw",
                "type": "cpu" if index % 2 == 0 else "memory",
                "resources": {"requests": requests},
            }
        )
    return apps


def cluster_name(workers: int) -> str:
    return f"bench-site-{workers}w"


def playbook(path: str, variables: dict[str, Any]) -> float:
    """Run a playbook with `variables` as extra vars; return its wall time in seconds."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(variables, handle)
    env = dict(
        os.environ,
        PATH=f"{TOOLS}:{REPO / '.venv' / 'bin'}:{os.environ['PATH']}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
    )
    started = time.perf_counter()
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), path, "-e", f"@{handle.name}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    Path(handle.name).unlink()
    if result.returncode != 0:
        sys.exit(f"{path} failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}")
    recap = [line for line in result.stdout.splitlines() if line.startswith("localhost")]
    print(f"  {path}: {elapsed:.1f} s  {recap[-1].split(':', 1)[1].strip() if recap else ''}", file=sys.stderr)
    return elapsed


def site_vars(apps: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    return {
        "cluster_provider": "kwok",
        "cluster_name": cluster_name(workers),
        "cluster_workers": workers,
        "kwok_cluster_user_kubeconfig": "",
        "apps": apps,
    }


def api_client(workers: int) -> client.ApiClient:
    name = cluster_name(workers)
    kubeconfig = WORKDIR / "clusters" / name / "kubeconfig.yaml"
    return config.new_client_from_config(config_file=str(kubeconfig), context=f"kwok-{name}")


def interference_of(pods: list[Any]) -> float:
    """Total interference (score) of the pods where they run: sum over nodes of dot() over pairs."""
    on_node: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    for pod in pods:
        on_node[pod.spec.node_name].append(profile_for_type(pod.metadata.labels[TYPE_LABEL]))
    return sum(
        dot(profiles[i], profiles[j])
        for profiles in on_node.values()
        for i in range(len(profiles))
        for j in range(i + 1, len(profiles))
    )


def native_deployment(app: dict[str, Any]) -> dict[str, Any]:
    """The app as kube-scheduler would get it natively: no pinning, preferred anti-affinity on its type."""
    labels = {APP_LABEL: app["name"], TYPE_LABEL: app["type"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app["name"], "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {APP_LABEL: app["name"]}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "affinity": {
                        "podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "weight": 100,
                                    "podAffinityTerm": {
                                        "labelSelector": {"matchLabels": {TYPE_LABEL: app["type"]}},
                                        "topologyKey": "kubernetes.io/hostname",
                                    },
                                }
                            ]
                        }
                    },
                    "containers": [{"name": app["name"], "image": app["image"], "resources": app["resources"]}],
                },
            },
        },
    }


def running_pods(core: Any, namespace: str, expected: int, timeout: float = 600) -> list[Any]:
    """Wait until `expected` live pods of `namespace` run on a node; return them."""
    deadline = time.monotonic() + timeout
    while True:
        pods = [
            pod
            for pod in core.list_namespaced_pod(namespace).items
            if pod.metadata.deletion_timestamp is None and pod.spec.node_name and pod.status.phase == "Running"
        ]
        if len(pods) >= expected:
            return pods
        if time.monotonic() > deadline:
            sys.exit(f"only {len(pods)}/{expected} pods running in {namespace}")
        time.sleep(1)


def run_site() -> list[dict[str, Any]]:
    rows = []
    for count, workers in SIZES:
        print(f"site.yml, {count} apps on {workers} workers", file=sys.stderr)
        playbook("playbooks/teardown.yml", site_vars([], workers))
        variables = site_vars(make_apps(count), workers)
        first = playbook("site.yml", variables)
        rerun = playbook("site.yml", variables)
        rows.append({"apps": count, "workers": workers, "first_s": first, "rerun_s": rerun})
    return rows


def delete_namespace(core: Any, namespace: str) -> None:
    """Delete `namespace` and wait until it is gone (its pods with it)."""
    try:
        core.delete_namespace(namespace)
    except client.ApiException as error:
        if error.status != 404:
            raise
    while any(ns.metadata.name == namespace for ns in core.list_namespace().items):
        time.sleep(1)


def run_compare(mix: str) -> dict[str, Any]:
    count, workers = SIZES[-1]
    apps = make_apps(count, mix)
    print(f"compare ({mix}), {count} apps on {workers} workers", file=sys.stderr)
    playbook("site.yml", site_vars([], workers))  # the cluster, labelled
    api = api_client(workers)
    core: Any = client.CoreV1Api(api)
    apps_api: Any = client.AppsV1Api(api)
    # Both sides start from empty nodes: no earlier mix's pods, no previous plan.
    delete_namespace(core, NATIVE_NAMESPACE)
    delete_namespace(core, APPS_NAMESPACE)
    playbook("site.yml", site_vars(apps, workers))
    ours = running_pods(core, APPS_NAMESPACE, count)

    # kube-scheduler gets the nodes empty too.
    delete_namespace(core, APPS_NAMESPACE)
    core.create_namespace({"metadata": {"name": NATIVE_NAMESPACE}})
    started = time.perf_counter()
    for app in apps:
        apps_api.create_namespaced_deployment(NATIVE_NAMESPACE, native_deployment(app))
    native = running_pods(core, NATIVE_NAMESPACE, count)
    native_s = time.perf_counter() - started

    profiles = [profile_for_type(app["type"]) for app in apps]
    per_node_native: dict[str, dict[str, int]] = defaultdict(lambda: {"cpu": 0, "memory": 0})
    for pod in native:
        per_node_native[pod.spec.node_name][pod.metadata.labels[TYPE_LABEL]] += 1
    per_node_ours: dict[str, dict[str, int]] = defaultdict(lambda: {"cpu": 0, "memory": 0})
    for pod in ours:
        per_node_ours[pod.spec.node_name][pod.metadata.labels[TYPE_LABEL]] += 1
    return {
        "mix": mix,
        "apps": count,
        "workers": workers,
        "lower_bound": interference_lower_bound(profiles, workers),
        "ours": interference_of(ours),
        "kube_scheduler": interference_of(native),
        "kube_scheduler_seconds_to_running": native_s,
        "ours_per_node": {node: dict(counts) for node, counts in sorted(per_node_ours.items())},
        "kube_scheduler_per_node": {node: dict(counts) for node, counts in sorted(per_node_native.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="site|compare", help="parts to run (default: both)")
    parser.add_argument("--keep", action="store_true", help="keep the kwok clusters")
    parser.add_argument(
        "--mix", action="append", choices=["uniform", "varied"], help="request mix(es) of compare (default: both)"
    )
    args = parser.parse_args()
    parts = args.parts or ["site", "compare"]
    if set(parts) - {"site", "compare"}:
        parser.error(f"unknown part(s): {', '.join(sorted(set(parts) - {'site', 'compare'}))}")
    results: dict[str, Any] = {}
    if "site" in parts:
        results["site"] = run_site()
    if "compare" in parts:
        results["compare"] = [run_compare(mix) for mix in args.mix or ["uniform", "varied"]]
    if not args.keep:
        for _, workers in SIZES:
            playbook("playbooks/teardown.yml", site_vars([], workers))

    if "site" in results:
        print("| apps | workers | first run (s) | idempotent rerun (s) |")
        print("|---:|---:|---:|---:|")
        for row in results["site"]:
            print(f"| {row['apps']} | {row['workers']} | {row['first_s']:.1f} | {row['rerun_s']:.1f} |")
    if "compare" in results:
        print()
        print("| requests | lower bound | ours (site.yml) | kube-scheduler, preferred anti-affinity |")
        print("|---|---:|---:|---:|")
        for row in results["compare"]:
            print(f"| {row['mix']} | {row['lower_bound']:g} | {row['ours']:g} | {row['kube_scheduler']:g} |")
    print(json.dumps(results, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()

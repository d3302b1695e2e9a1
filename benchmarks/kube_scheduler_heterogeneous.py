#!/usr/bin/env python3
"""Our placement against kube-scheduler on heterogeneous nodes, on a kwok cluster (not a test).

The instances are benchmarks/placement.py's heterogeneous ones: 80 apps and
200 apps on 20 nodes (half 8 CPU / 32Gi, half 2 CPU / 8Gi), three instances
each, CPU requests adding up to about 80% of the cluster. For each instance,
on a real kube-apiserver and kube-scheduler (kwokctl, binaries in .cache/bin,
`make tools`), the apps are created as bare pods, in app order, with their
requests, and left to kube-scheduler twice:

  default          the default profile (resource fit, balanced allocation, ...)
  anti-affinity    plus a *preferred* pod anti-affinity (weight 100) on the
                   interference.orchestrator/type label, hostname topology: the
                   native way to keep noisy neighbours apart. `type: cpu` apps
                   are labelled cpu, `type: memory` ones memory, and apps with
                   a mixed profile by the resource they press on most.

Interference (score) is computed here from the nodes the pods were bound to
and the raw profiles (sum over nodes of pairwise dot products), next to the
engine's plan for the same input (`place`, default search_effort) and its
lower bound. kube-scheduler breaks ties at random, so its figures vary a
little from run to run.

`--nodes 100 --sizes 1000` runs the 1,000 apps x 100 nodes instances (nodes of
16, 8, 4 and 2 CPU). `--out` writes the raw rows as JSON first; the table is
printed from them. `--best` (benchmarks/reference_convergence.py's output)
adds each instance's best known plan.

Run: .venv/bin/python benchmarks/kube_scheduler_heterogeneous.py [--sizes 80 200] [--seeds 1 2 3] [--nodes 20]
     [--best benchmarks/results/reference_convergence.json] [--out rows.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.contract import TYPE_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    dominant_dimension,
    profile_for_type,
    profile_from_mapping,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place

from benchmarks.placement import make_heterogeneous
from benchmarks.reference_convergence import best_known
from tests.support.kwok import TOOLS, KwokCluster, missing_tools, wait_for

REPO = Path(__file__).resolve().parents[1]

NODE_COUNT = 20


def profile_of(app: dict[str, Any]) -> tuple[float, ...]:
    """The app's pressure vector, from its raw `type` or `profile` (as the engine reads it)."""
    if "profile" in app:
        return profile_from_mapping(app["profile"])
    return profile_for_type(app["type"])


def type_label(app: dict[str, Any]) -> str:
    """The label value the anti-affinity spreads on: the type, or the dominant resource of a mixed profile."""
    if "type" in app:
        return str(app["type"])
    return dominant_dimension(profile_of(app)).replace("_", "-")


def interference(apps: list[dict[str, Any]], node_of: dict[str, str]) -> float:
    """Sum over nodes of the pairwise dot products of the profiles there (score), written out here."""
    residents: dict[str, list[tuple[float, ...]]] = {}
    for app in apps:
        residents.setdefault(node_of[app["name"]], []).append(profile_of(app))
    total = 0.0
    for profiles in residents.values():
        for i, left in enumerate(profiles):
            for right in profiles[i + 1:]:
                total += sum(a * b for a, b in zip(left, right, strict=True))
    return total


def node_body(node: dict[str, Any]) -> dict[str, Any]:
    """A Node object for kwok-controller to play, with the instance's allocatable."""
    allocatable = node["allocatable"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node["name"],
            "labels": {**node["labels"], "kubernetes.io/hostname": node["name"], "kubernetes.io/os": "linux",
                       "type": "kwok"},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable)},
    }


def pod_body(app: dict[str, Any], anti_affinity: bool) -> dict[str, Any]:
    """The app as one bare pod: requests, type label and, if asked, preferred anti-affinity on the type."""
    label = type_label(app)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": app["image"], "resources": app["resources"]}],
        "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if anti_affinity:
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {TYPE_LABEL: label}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": app["name"], "labels": {TYPE_LABEL: label}},
            "spec": spec}


def schedule(core: Any, namespace: str, apps: list[dict[str, Any]], anti_affinity: bool) -> dict[str, str]:
    """Create the pods in `namespace` in app order; wait until all are bound; return app name -> node."""
    core.create_namespace({"metadata": {"name": namespace}})
    wait_for(f"the default ServiceAccount in {namespace}",
             lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(namespace).items))
    for app in apps:
        core.create_namespaced_pod(namespace, pod_body(app, anti_affinity))

    def bound() -> dict[str, str] | None:
        pods = core.list_namespaced_pod(namespace).items
        node_of = {pod.metadata.name: pod.spec.node_name for pod in pods if pod.spec.node_name}
        return node_of if len(node_of) == len(apps) else None

    node_of: dict[str, str] = wait_for(f"{len(apps)} pods bound in {namespace}", bound, timeout=600, interval=1.0)
    core.delete_namespace(namespace)
    # Free the nodes before the next run: wait until the namespace (and its pods) is gone.
    wait_for(f"{namespace} deleted",
             lambda: all(ns.metadata.name != namespace for ns in core.list_namespace().items), timeout=300)
    return node_of


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[80, 200])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--nodes", type=int, default=NODE_COUNT, help="nodes per instance (one node set per run)")
    parser.add_argument("--best", type=Path, help="reference_convergence.py's output: the best known plans")
    parser.add_argument("--out", type=Path, help="write the raw rows here (JSON)")
    args = parser.parse_args()
    best = best_known(args.best) if args.best else {}
    missing = missing_tools()
    if missing:
        print(f"missing in {TOOLS}: {', '.join(missing)} (make tools)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kwok-het-") as workdir:
        cluster = KwokCluster(name="bench-het", workdir=Path(workdir))
        cluster.create()
        try:
            core = cluster.api()
            _, nodes = make_heterogeneous(args.sizes[0], args.nodes, args.seeds[0])
            for node in nodes:  # every instance of one node count has the same nodes
                core.create_node(node_body(node))
            wait_for("the nodes to be Ready", lambda: all(
                any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
                for n in core.list_node().items if n.metadata.name.startswith("node-")
            ) and len([n for n in core.list_node().items if n.metadata.name.startswith("node-")]) == args.nodes)
            for size in args.sizes:
                for seed in args.seeds:
                    apps, instance_nodes = make_heterogeneous(size, args.nodes, seed)
                    assert instance_nodes == nodes
                    started = time.perf_counter()
                    plan = place(apps, nodes)
                    engine_seconds = time.perf_counter() - started
                    engine = interference(apps, {a["name"]: plan.node_names(i)[0] for i, a in enumerate(apps)})
                    instance = f"{size}x{args.nodes} het #{seed}"
                    row: dict[str, Any] = {
                        "instance": instance, "best_known": best.get(instance), "bound": plan.lower_bound,
                        "engine": engine, "engine_reported": plan.total_interference, "engine_s": engine_seconds,
                    }
                    for variant, anti in (("default", False), ("anti_affinity", True)):
                        started = time.perf_counter()
                        node_of = schedule(core, f"het-{size}-{seed}-{variant.replace('_', '-')}", apps, anti)
                        row[f"{variant}_s"] = time.perf_counter() - started
                        row[variant] = interference(apps, node_of)
                    rows.append(row)
                    print(row, file=sys.stderr, flush=True)
                    if args.out:
                        args.out.write_text(json.dumps(rows, indent=1) + "\n")
        finally:
            cluster.delete()
    print("| instance | lower bound | best known | engine | kube-scheduler default | kube-scheduler + anti-affinity "
          "| engine below anti-affinity |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        known_cell = "-" if row["best_known"] is None else f"{row['best_known']:.1f}"
        print(f"| {row['instance']} | {row['bound']:.1f} | {known_cell} | {row['engine']:.1f} | {row['default']:.1f} "
              f"| {row['anti_affinity']:.1f} | {(1 - row['engine'] / row['anti_affinity']) * 100:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

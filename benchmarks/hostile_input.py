#!/usr/bin/env python3
"""Hostile input benchmark: the cases issue 12 found, timed through the engine as the filters call it.

Not a test: it prints one table. Each row is an input that used to hang the
run or exhaust its memory, what the engine now does with it (a plan or the
error's first words) and how long that takes: wall and CPU time of the call
(validation, placement and the report, as `placement_report` does; plan_apps
for the annotation case), and peak memory of a second, traced run.

For the crowded nodes, the pairs are also listed the way the report listed
them before (every pair of apps on a node enumerated, `enumerated_pairs`
below, a copy of the old Plan.interfering_pairs), side by side with
placement.find_collisions on the same plan; that column is left out above
--enumerate-max pods, where it would take minutes.

Usage: python benchmarks/hostile_input.py [--enumerate-max 2000] [--skip-worst]
"""

from __future__ import annotations

import argparse
import contextlib
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import EPSILON, dot, pair_reason
from ansible_collections.interference.orchestrator.plugins.module_utils.model import MAX_PODS, MAX_REPLICAS
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import Plan, find_collisions, place


def cpu_apps(count: int, replicas: int = 1) -> list[dict[str, Any]]:
    return [{"name": f"app-{i}", "image": "pts/c-ray", "type": "cpu", "replicas": replicas} for i in range(count)]


def distinct_profile_apps(count: int) -> list[dict[str, Any]]:
    return [
        {"name": f"app-{i}", "image": "pts/c-ray", "profile": {"cpu": (i + 1) / count, "llc": 1 - i / count}}
        for i in range(count)
    ]


def enumerated_pairs(plan: Plan) -> list[dict[str, Any]]:
    """The pair listing as it was before issue 12: every pair of apps on each node, scored one by one."""
    per_node: list[list[int]] = [[] for _ in plan.nodes]
    for app_index, replicas in enumerate(plan.assignment):
        for node_index in replicas:
            per_node[node_index].append(app_index)
    pairs: dict[tuple[int, int, int], float] = {}
    for node_index, residents in enumerate(per_node):
        for i, left in enumerate(residents):
            for right in residents[i + 1:]:
                score = dot(plan.apps[left].profile, plan.apps[right].profile)
                if score > EPSILON:
                    key = (node_index, min(left, right), max(left, right))
                    pairs[key] = pairs.get(key, 0.0) + score
    return [
        {"node": plan.nodes[n].name, "apps": [plan.apps[a].name, plan.apps[b].name], "score": round(score, 6),
         "reason": pair_reason(plan.apps[a].profile, plan.apps[b].profile)}
        for (n, a, b), score in sorted(pairs.items())
    ]


def measure(call: Callable[[], Any]) -> tuple[str, float, float, float]:
    """(outcome, wall s, CPU s, peak MB): the outcome is 'plan' or the error's first words."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        call()
        outcome = "plan"
    except PlacementError as exc:
        message = str(exc)
        outcome = f"error: {message[:90]}..." if len(message) > 90 else f"error: {message}"
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    tracemalloc.start()
    with contextlib.suppress(PlacementError):
        call()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return outcome, wall, cpu, peak


def report_of(apps: list[dict[str, Any]], nodes: list[Any]) -> Callable[[], Any]:
    return lambda: place(apps, nodes).report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enumerate-max", type=int, default=2_000,
                        help="enumerate the pairs the old way only up to this many pods")
    parser.add_argument("--skip-worst", action="store_true",
                        help="leave out the engine's worst case within the bounds (about a minute on a busy machine)")
    args = parser.parse_args()

    big_env = {f"VAR_{i}": "x" * 100 for i in range(70_000)}  # 7 MB, as a YAML anchor repeated builds it
    worst_nodes = [{"name": f"n{i}", "allocatable": {"cpu": str(i + 1), "memory": "256Gi", "pods": "110"}}
                   for i in range(5_000)]
    worst_apps = [{"name": f"app-{i}", "image": "pts/c-ray", "type": "cpu",
                   "resources": {"requests": {"cpu": f"{(i + 1) * 50}m"}}} for i in range(10_000)]
    cases: list[tuple[str, Callable[[], Any], list[dict[str, Any]] | None, list[Any] | None]] = [
        ("replicas 1,000,000 on one node", report_of(cpu_apps(1, 10**6), ["w1"]), None, None),
        ("replicas 10^9 on one node", report_of(cpu_apps(1, 10**9), ["w1"]), None, None),
        (f"replicas {MAX_REPLICAS:,} (the bound) on one node", report_of(cpu_apps(1, MAX_REPLICAS), ["w1"]),
         cpu_apps(1, MAX_REPLICAS), ["w1"]),
        ("2,000 cpu apps on one node", report_of(cpu_apps(2_000), ["w1"]), cpu_apps(2_000), ["w1"]),
        ("10,000 cpu apps on one node", report_of(cpu_apps(10_000), ["w1"]), cpu_apps(10_000), ["w1"]),
        ("10,000 apps of distinct profiles on one node", report_of(distinct_profile_apps(10_000), ["w1"]),
         distinct_profile_apps(10_000), ["w1"]),
        (f"{MAX_PODS:,} pods (the bound): 10,000 apps x 5 replicas on 500 nodes",
         report_of(cpu_apps(10_000, 5), [f"n{i}" for i in range(500)]), None, None),
        (f"{MAX_PODS + 1:,} pods: 10,000 apps, one of them with 6 replicas", report_of(
            [*cpu_apps(9_999, 5), {"name": "one-more", "image": "pts/c-ray", "type": "cpu", "replicas": 6}],
            [f"n{i}" for i in range(500)]), None, None),
        ("an env of 7 MB (plan_apps)", lambda: plan_apps(
            [{"name": "web", "image": "pts/c-ray", "type": "cpu", "env": big_env}], ["w1"]), None, None),
    ]
    if not args.skip_worst:
        cases.append(("worst within the bounds: 10,000 apps, each request excluding other nodes, on 5,000 nodes "
                      "of 1 to 5,000 CPUs", report_of(worst_apps, worst_nodes), None, None))

    print("| input | now | wall | CPU | peak memory | pairs enumerated (before) | find_collisions | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, call, apps, nodes in cases:
        outcome, wall, cpu, peak = measure(call)
        before = after = ratio = "-"
        if apps is not None and nodes is not None:
            plan = place(apps, nodes)
            started = time.process_time()
            find_collisions(plan.apps, plan.nodes, plan.assignment)
            collisions_cpu = time.process_time() - started
            after = f"{collisions_cpu * 1000:.1f}ms"
            pods = sum(len(replicas) for replicas in plan.assignment)
            if pods <= args.enumerate_max:
                started = time.process_time()
                enumerated_pairs(plan)
                enumerated_cpu = time.process_time() - started
                before = f"{enumerated_cpu * 1000:.1f}ms"
                ratio = f"{enumerated_cpu / max(collisions_cpu, 1e-6):,.0f}x"
            else:
                before = f"not run ({pods * (pods - 1) // 2:,} pairs of pods)"
        print(f"| {label} | {outcome} | {wall:.2f}s | {cpu:.2f}s | {peak:.1f}MB | {before} | {after} | {ratio} |",
              flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Placement benchmark: our engine against the seed's alternating policy and random placement.

Not a test: it prints one table, measured side by side in one run, for
100 apps x 10 nodes, 1,000 x 100 and 10,000 x 1,000. Apps are 45% `cpu`,
45% `memory` and 10% mixed pressure profiles; 30% carry resource requests.
"roomy" nodes are big enough that capacity never binds (the lower bound is
then the yardstick); "tight" nodes hold about 1.25x the requested cpu.

Columns: wall time (median of --repeat runs, input validation included),
peak memory of the call (tracemalloc, a separate run so tracing does not
distort the time), total interference (score), the lower bound, and the gap
to it. Usage: python benchmarks/placement.py [--repeat 3] [--max-apps 10000]
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collections"))

from ansible_collections.interference.orchestrator.plugins.module_utils.baselines import (
    alternating_assignment,
    random_assignment,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import (
    parse_apps,
    parse_quantity,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import (
    place,
    sum_interference,
)

SIZES = [(100, 10), (1_000, 100), (10_000, 1_000)]


def make_apps(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    apps = []
    for index in range(count):
        item: dict[str, Any] = {"name": f"app-{index}", "image": "pts/c-ray"}
        draw = rng.random()
        if draw < 0.45:
            item["type"] = "cpu"
        elif draw < 0.9:
            item["type"] = "memory"
        else:
            item["profile"] = {
                "cpu": rng.choice([0.2, 0.5, 0.8]),
                "llc": rng.choice([0.3, 0.6]),
                "memory_bandwidth": rng.choice([0.0, 0.4]),
            }
        if rng.random() < 0.3:
            item["resources"] = {"requests": {"cpu": rng.choice(["100m", "250m", "500m"]),
                                              "memory": rng.choice(["128Mi", "256Mi"])}}
        apps.append(item)
    return apps


def make_heterogeneous(app_count: int, node_count: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A heterogeneous instance where capacity binds: (apps, nodes).

    Nodes: with 20 nodes, half 8 CPU / 32Gi and half 2 CPU / 8Gi (the
    operator's cluster); larger clusters cycle through 16, 8, 4 and 2 CPU
    (4Gi of memory per CPU). Apps: 40% `type: cpu`, 40% `type: memory`, 20%
    mixed profiles over llc, memory_bandwidth and cpu. CPU requests of sizes
    1:2:4:8 scaled to add up to about 80% of the cluster's CPU (millicores);
    memory requests of 1:2:4 parts scaled to about 50% of its memory (bytes).
    """
    rng = random.Random(seed)
    sizes = [8, 2] if node_count <= 20 else [16, 8, 4, 2]
    node_cpus = [sizes[index % len(sizes)] for index in range(node_count)]
    nodes = [
        {"name": f"node-{index}", "labels": {"size": f"{cpus}cpu"},
         "allocatable": {"cpu": str(cpus), "memory": f"{cpus * 4}Gi", "pods": "110"}}
        for index, cpus in enumerate(node_cpus)
    ]
    cpu_weights = [rng.choice([1, 2, 4, 8]) for _ in range(app_count)]
    memory_weights = [rng.choice([1, 2, 4]) for _ in range(app_count)]
    cpu_unit = sum(node_cpus) * 1000 * 0.8 / sum(cpu_weights)
    memory_unit = sum(node_cpus) * 4 * 1024 * 0.5 / sum(memory_weights)
    apps = []
    for index in range(app_count):
        item: dict[str, Any] = {"name": f"app-{index}", "image": "pts/c-ray"}
        draw = rng.random()
        if draw < 0.4:
            item["type"] = "cpu"
        elif draw < 0.8:
            item["type"] = "memory"
        else:
            item["profile"] = {
                "cpu": rng.choice([0.2, 0.5, 0.8]),
                "llc": rng.choice([0.3, 0.6]),
                "memory_bandwidth": rng.choice([0.0, 0.4]),
            }
        millicores = max(10, int(cpu_weights[index] * cpu_unit) // 10 * 10)
        item["resources"] = {"requests": {"cpu": f"{millicores}m",
                                          "memory": f"{max(16, int(memory_weights[index] * memory_unit))}Mi"}}
        apps.append(item)
    return apps, nodes


def make_nodes(count: int, apps: list[dict[str, Any]], tight: bool) -> list[dict[str, Any]]:
    if tight:
        requested = sum(parse_quantity(a.get("resources", {}).get("requests", {}).get("cpu", "0")) for a in apps)
        cpu = f"{math.ceil(float(requested) * 1250 / count)}m"
        pods = str(math.ceil(len(apps) * 1.25 / count))
    else:
        cpu, pods = "1000", "100000"
    return [{"name": f"node-{i}", "allocatable": {"cpu": cpu, "memory": "1Ti", "pods": pods}} for i in range(count)]


def timed(function: Any, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_bytes(function: Any) -> int:
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-apps", type=int, default=10_000)
    args = parser.parse_args()
    parse_quantity("1")  # import the kubernetes client outside the timings

    header = (f"{'instance':<22} {'policy':<12} {'time':>9} {'peak mem':>9} "
              f"{'interference':>13} {'lower bnd':>10} {'gap':>7}")
    print(header)
    print("-" * len(header))
    for app_count, node_count in SIZES:
        if app_count > args.max_apps:
            continue
        raw_apps = make_apps(app_count, seed=app_count)
        apps = parse_apps(raw_apps)
        for tight in (False, True):
            raw_nodes = make_nodes(node_count, raw_apps, tight)
            label = f"{app_count}x{node_count} {'tight' if tight else 'roomy'}"

            ours = functools.partial(place, raw_apps, raw_nodes)
            seconds, plan = timed(ours, args.repeat)
            bound = plan.lower_bound
            rows = [("engine", seconds, peak_bytes(ours), plan.total_interference)]
            for name, policy in (("alternating", alternating_assignment), ("random", random_assignment)):
                run_policy = functools.partial(policy, apps, node_count)
                policy_seconds, assignment = timed(run_policy, args.repeat)
                rows.append((name, policy_seconds, peak_bytes(run_policy), sum_interference(apps, assignment)))
            for name, row_seconds, row_peak, score in rows:
                gap = f"{(score - bound) / bound * 100:.2f}%" if bound else "-"
                print(f"{label:<22} {name:<12} {row_seconds * 1000:>7.1f}ms {row_peak / 2**20:>7.1f}MB "
                      f"{score:>13.1f} {bound:>10.1f} {gap:>7}")
            print(f"{'':<22} engine: {plan.method}, proven optimal: {plan.proven_optimal}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Placement benchmark: our engine against a reference search, the seed's alternating policy and random placement.

Not a test: it prints two tables, measured side by side in one run.

homogeneous: 100 apps x 10 nodes, 1,000 x 100 and 10,000 x 1,000 equal
nodes. Apps are 45% `cpu`, 45% `memory` and 10% mixed pressure profiles; 30%
carry resource requests. "roomy" nodes are big enough that capacity never
binds (the lower bound is then the yardstick); "tight" nodes hold about 1.25x
the requested cpu.

heterogeneous: 80 x 20 and 200 x 20 (three instances each; half the nodes
8 CPU, half 2 CPU), 2,000 x 200 and 10,000 x 1,000 (16, 8, 4 and 2 CPU
nodes); 40% `cpu`, 40% `memory`, 20% mixed profiles; CPU requests of varied
sizes adding up to 80% of the cluster (see make_heterogeneous). The extra row
"reference" is benchmarks/reference_search.py, an independent simulated
annealing given ten times the engine's move budget.

Columns: wall and CPU time (median of --repeat runs, input validation included),
peak memory of the call (tracemalloc, a separate run so tracing does not
distort the time), total interference (score), the lower bound, the gap to
it, and the distance to the reference search's plan ("vs ref").
Usage: python benchmarks/placement.py [--repeat 3] [--max-apps 10000] [--part heterogeneous]
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import statistics
import time
import tracemalloc
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.model import (
    parse_apps,
    parse_nodes,
    parse_quantity,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import (
    anneal_budget,
    place,
    sum_interference,
)
from baselines import (
    alternating_assignment,
    random_assignment,
)
from reference_search import plan_score, reference_search  # benchmarks/, the script's own folder

SIZES = [(100, 10), (1_000, 100), (10_000, 1_000)]
# (apps, nodes, instance seeds): the operator's 80 x 20 and 200 x 20 clusters, then larger ones.
HETEROGENEOUS_SIZES = [(80, 20, (1, 2, 3)), (200, 20, (1, 2, 3)), (2_000, 200, (1,)), (10_000, 1_000, (1,))]


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


def timed(function: Any, repeat: int) -> tuple[tuple[float, float], Any]:
    """Run `function` `repeat` times: ((median wall seconds, median CPU seconds of this process), last result).

    CPU time is shown next to wall time because the machine is shared: under
    other jobs' load the wall time of the same run grows, its CPU time much less.
    """
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    return (statistics.median(walls), statistics.median(cpus)), result


def peak_bytes(function: Any) -> int:
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def print_row(label: str, name: str, figures: tuple[tuple[float, float], int | None, float], bound: float, *,
              reference: float | None = None) -> None:
    """One table row; figures = ((wall s, CPU s), peak bytes or None, interference score); bound is a score."""
    (seconds, cpu_seconds), peak, score = figures
    gap = f"{(score - bound) / bound * 100:.2f}%" if bound else "-"
    vs_reference = f"{(score - reference) / reference * 100:+.2f}%" if reference else "-"
    memory = f"{peak / 2**20:>7.1f}MB" if peak is not None else f"{'-':>9}"
    print(f"{label:<22} {name:<12} {seconds * 1000:>9.1f}ms {cpu_seconds * 1000:>9.1f}ms {memory} "
          f"{score:>13.1f} {bound:>10.1f} {gap:>8} {vs_reference:>9}", flush=True)


def homogeneous(args: argparse.Namespace) -> None:
    """Equal nodes, roomy or tight: the engine against the lower bound."""
    header = (f"{'instance':<22} {'policy':<12} {'wall time':>11} {'cpu time':>11} {'peak mem':>9} "
              f"{'interference':>13} {'lower bnd':>10} {'gap':>8} {'vs ref':>9}")
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
            print_row(label, "engine", (seconds, peak_bytes(ours), plan.total_interference), bound)
            for name, policy in (("alternating", alternating_assignment), ("random", random_assignment)):
                run_policy = functools.partial(policy, apps, node_count)
                policy_seconds, assignment = timed(run_policy, args.repeat)
                score = sum_interference(apps, assignment)
                print_row(label, name, (policy_seconds, peak_bytes(run_policy), score), bound)
            print(f"{'':<22} engine: {plan.method}, proven optimal: {plan.proven_optimal}")


def heterogeneous(args: argparse.Namespace) -> None:
    """Nodes of different sizes with binding requests: engine, reference search, alternating, random.

    The reference search (benchmarks/reference_search.py) gets ten times the
    engine's annealing budget. "vs ref" is each plan's distance to it. The
    alternating and random policies ignore requests, so their plans overload
    nodes: they are what was done before, not feasible alternatives.
    """
    header = (f"{'instance':<22} {'policy':<12} {'wall time':>11} {'cpu time':>11} {'peak mem':>9} "
              f"{'interference':>13} {'lower bnd':>10} {'gap':>8} {'vs ref':>9}")
    print(header)
    print("-" * len(header))
    for app_count, node_count, seeds in HETEROGENEOUS_SIZES:
        if app_count > args.max_apps or app_count < args.min_apps:
            continue
        for seed in seeds:
            if args.seeds and seed not in args.seeds:
                continue
            raw_apps, raw_nodes = make_heterogeneous(app_count, node_count, seed)
            apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
            label = f"{app_count}x{node_count} het #{seed}"
            ours = functools.partial(place, raw_apps, raw_nodes)
            seconds, plan = timed(ours, args.repeat)
            bound = plan.lower_bound
            moves = 10 * anneal_budget(app_count, 1.0, math.inf, 0.0)
            reference_seconds, reference_plan = timed(functools.partial(reference_search, apps, nodes, moves), 1)
            reference = plan_score(apps, reference_plan, node_count)
            reference_peak = None
            if app_count <= args.reference_memory_max:
                reference_peak = peak_bytes(functools.partial(reference_search, apps, nodes, moves))
            print_row(label, "engine", (seconds, peak_bytes(ours), plan.total_interference), bound, reference=reference)
            print_row(label, "reference", (reference_seconds, reference_peak, reference), bound, reference=reference)
            for name, policy in (("alternating", alternating_assignment), ("random", random_assignment)):
                run_policy = functools.partial(policy, apps, node_count)
                policy_seconds, assignment = timed(run_policy, args.repeat)
                score = sum_interference(apps, assignment)
                print_row(label, name, (policy_seconds, peak_bytes(run_policy), score), bound, reference=reference)
            print(f"{'':<22} engine: {plan.method}; reference: {moves:,} moves", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-apps", type=int, default=10_000)
    parser.add_argument("--min-apps", type=int, default=0, help="heterogeneous part: skip smaller instances")
    parser.add_argument("--seeds", type=int, nargs="*", help="heterogeneous part: only these instance seeds")
    parser.add_argument("--part", choices=["homogeneous", "heterogeneous", "all"], default="all")
    parser.add_argument("--reference-memory-max", type=int, default=2_000,
                        help="trace the reference search's memory (a second, slower run) up to this many apps")
    args = parser.parse_args()
    parse_quantity("1")  # import the kubernetes client outside the timings
    if args.part in ("homogeneous", "all"):
        homogeneous(args)
    if args.part in ("heterogeneous", "all"):
        print()
        heterogeneous(args)


if __name__ == "__main__":
    main()

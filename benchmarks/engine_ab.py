#!/usr/bin/env python3
"""Engine A/B: the placement engine of two checkouts on the same instances, alternated, one process per call.

Not a test. For each instance of benchmarks/placement.py's generators
(homogeneous roomy and tight, heterogeneous), each round runs `place` once
in a fresh process per checkout, the order alternating by round, and records
the call's CPU time, the plan's score and a hash of its assignment. "same
plan" says whether both checkouts gave the same assignments in every round.

`--cases small` runs the instances where the annealing has budget to spare
instead (heterogeneous 80 x 20 and 200 x 20, homogeneous 100 x 10); with
`--anneal-seeds` each side runs once per annealing seed (the engine's is fixed,
so this shows whether a difference is one seed's luck); with `--best` (the
output of benchmarks/reference_convergence.py) each row gives each side's
distance to the instance's best known plan.

Each checkout needs collections/ansible_collections/interference/orchestrator
linking to itself (make setup does that).
Usage: python benchmarks/engine_ab.py --old /tmp/old-checkout --new . [--rounds 3] [--cases small]
       [--anneal-seeds 13 1 2] [--best benchmarks/results/reference_convergence.json] [--out ab.json]
       python benchmarks/engine_ab.py --from-rows ab.json   (the summary again, from the raw rows alone)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from reference_convergence import best_known  # benchmarks/, the script's own folder

CODE = r'''
import hashlib, json, time
from placement import make_apps, make_heterogeneous, make_nodes
import ansible_collections.interference.orchestrator.plugins.module_utils.placement as engine
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
if {anneal_seed} is not None:
    engine.ANNEAL_SEED = {anneal_seed}
kind, count, nodes_count, seed = "{kind}", {count}, {nodes}, {seed}
if kind == "homogeneous":
    apps = make_apps(count, seed=count)
    nodes = make_nodes(nodes_count, apps, {tight})
else:
    apps, nodes = make_heterogeneous(count, nodes_count, seed)
# Untimed first: the modules the first call loads (the Kubernetes quantity parser) cost more than a small plan.
place([{{"name": "warm", "image": "warm", "type": "cpu"}}], [{{"name": "warm"}}])
started = time.process_time()
plan = place(apps, nodes)
cpu = time.process_time() - started
digest = hashlib.sha1(json.dumps(plan.assignment).encode()).hexdigest()
print(json.dumps({{"cpu": cpu, "score": plan.total_interference, "bound": plan.lower_bound, "hash": digest}}))
'''
CASES = [
    ("homogeneous", 10_000, 1_000, 0, False),
    ("homogeneous", 1_000, 100, 0, True),
    ("heterogeneous", 200, 20, 1, False),
    ("heterogeneous", 2_000, 200, 1, False),
    ("heterogeneous", 10_000, 1_000, 1, False),
]
SMALL_CASES = [
    *(("heterogeneous", 80, 20, seed, False) for seed in range(1, 13)),
    *(("heterogeneous", 200, 20, seed, False) for seed in range(1, 7)),
    ("homogeneous", 100, 10, 0, False),
    ("homogeneous", 100, 10, 0, True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path)
    parser.add_argument("--new", type=Path, default=Path.cwd())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", choices=["default", "small"], default="default")
    parser.add_argument("--anneal-seeds", type=int, nargs="*", default=[None])
    parser.add_argument("--best", type=Path, help="reference_convergence.py's output: the best known plans")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--from-rows", type=Path, help="only print the summary of rows an earlier run wrote (--out)")
    args = parser.parse_args()
    best = best_known(args.best) if args.best else {}
    if args.from_rows:
        print_summary(json.loads(args.from_rows.read_text()), best)
        return
    if args.old is None:
        parser.error("--old is required (or --from-rows)")
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    rows = []
    for (kind, count, nodes, seed, tight), anneal_seed in itertools.product(
        SMALL_CASES if args.cases == "small" else CASES, args.anneal_seeds
    ):
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        plans: dict[str, set[tuple[str, float]]] = {"old": set(), "new": set()}
        bounds: set[float] = set()
        for index in range(args.rounds):
            for side in ("old", "new") if index % 2 == 0 else ("new", "old"):
                code = CODE.format(root=sides[side], kind=kind, count=count, nodes=nodes, seed=seed, tight=tight,
                                   anneal_seed=anneal_seed)
                # Each side's own roots, the way `make bench` sets them for one checkout.
                roots = os.pathsep.join(str(sides[side] / sub) for sub in ("collections", "benchmarks", "."))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": roots}).stdout
                result = json.loads(out)
                cpu[side].append(result["cpu"])
                plans[side].add((result["hash"], result["score"]))
                bounds.add(result["bound"])
        # The heterogeneous instances are named as placement.py and reference_convergence.py name them.
        instance = (f"{count}x{nodes} het #{seed}" if kind == "heterogeneous"
                    else f"{kind} {count}x{nodes}{' tight' if tight else ''}")
        row = {
            "instance": instance,
            "anneal_seed": anneal_seed,
            "old_cpu_s": cpu["old"], "new_cpu_s": cpu["new"],
            "cpu_ratio_median": statistics.median(n / o for n, o in zip(cpu["new"], cpu["old"], strict=True)),
            "same_plan": plans["old"] == plans["new"] and len(plans["old"]) == 1,
            "scores": {side: sorted(score for _, score in found) for side, found in plans.items()},
            "lower_bound": bounds.pop() if len(bounds) == 1 else sorted(bounds),
        }
        if instance in best:
            row["best_known"] = best[instance]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print_summary(rows, best)


def print_summary(rows: list[dict[str, Any]], best: dict[str, float]) -> None:
    """Per instance group (the name without its seed), computed from the rows and the best known plans alone: each
    side's distance to the best known plan (mean, worst, how many rows above 1%; a side's worst plan where its rounds
    differed), the median of the rows' CPU ratios (new / old) and how far the best known plans are above
    the lower bound."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["instance"].split(" #")[0], []).append(row)
    for group, members in groups.items():
        ratio = statistics.median(r["cpu_ratio_median"] for r in members)
        line = f"{group:<28} rows {len(members):>3}  CPU new/old {ratio:.2f}"
        for side in ("old", "new"):
            gaps = [max(r["scores"][side]) / best[r["instance"]] - 1 for r in members if r["instance"] in best]
            if gaps:
                line += (f"  {side}: mean {statistics.fmean(gaps) * 100:+.2f}% worst {max(gaps) * 100:+.2f}%"
                         f" above 1% {sum(gap > 0.01 for gap in gaps)}")
        slack = [best[r["instance"]] / r["lower_bound"] - 1 for r in members
                 if r["instance"] in best and isinstance(r.get("lower_bound"), float) and r["lower_bound"] > 0]
        if slack:
            line += f"  best known above the bound: mean {statistics.fmean(slack) * 100:.1f}%"
        print(line)


if __name__ == "__main__":
    main()

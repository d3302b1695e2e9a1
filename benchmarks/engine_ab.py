#!/usr/bin/env python3
"""Engine A/B: the placement engine of two checkouts on the same instances, alternated, one process per call.

Not a test. For each instance of benchmarks/placement.py's generators
(homogeneous roomy and tight, heterogeneous), each round runs `place` once
in a fresh process per checkout, the order alternating by round, and records
the call's CPU time, the plan's score and a hash of its assignment. "same
plan" says whether both checkouts gave the same assignments in every round.

Each checkout needs collections/ansible_collections/interference/orchestrator
linking to itself (make setup does that).
Usage: python benchmarks/engine_ab.py --old /tmp/old-checkout --new . [--rounds 3] [--out ab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CODE = r'''
import hashlib, json, time
from placement import make_apps, make_heterogeneous, make_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place
kind, count, nodes_count, seed = "{kind}", {count}, {nodes}, {seed}
if kind == "homogeneous":
    apps = make_apps(count, seed=count)
    nodes = make_nodes(nodes_count, apps, {tight})
else:
    apps, nodes = make_heterogeneous(count, nodes_count, seed)
started = time.process_time()
plan = place(apps, nodes)
cpu = time.process_time() - started
digest = hashlib.sha1(json.dumps(plan.assignment).encode()).hexdigest()
print(json.dumps({{"cpu": cpu, "score": plan.total_interference, "hash": digest}}))
'''
CASES = [
    ("homogeneous", 10_000, 1_000, 0, False),
    ("homogeneous", 1_000, 100, 0, True),
    ("heterogeneous", 200, 20, 1, False),
    ("heterogeneous", 2_000, 200, 1, False),
    ("heterogeneous", 10_000, 1_000, 1, False),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, default=Path.cwd())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sides = {"old": args.old.resolve(), "new": args.new.resolve()}
    rows = []
    for kind, count, nodes, seed, tight in CASES:
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        plans: dict[str, set[tuple[str, float]]] = {"old": set(), "new": set()}
        for index in range(args.rounds):
            for side in ("old", "new") if index % 2 == 0 else ("new", "old"):
                code = CODE.format(root=sides[side], kind=kind, count=count, nodes=nodes, seed=seed, tight=tight)
                # Each side's own roots, the way `make bench` sets them for one checkout.
                roots = os.pathsep.join(str(sides[side] / sub) for sub in ("collections", "benchmarks", "."))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": roots}).stdout
                result = json.loads(out)
                cpu[side].append(result["cpu"])
                plans[side].add((result["hash"], result["score"]))
        row = {
            "instance": f"{kind} {count}x{nodes}{' tight' if tight else ''}",
            "old_cpu_s": cpu["old"], "new_cpu_s": cpu["new"],
            "cpu_ratio_median": statistics.median(n / o for n, o in zip(cpu["new"], cpu["old"], strict=True)),
            "same_plan": plans["old"] == plans["new"] and len(plans["old"]) == 1,
            "scores": {side: sorted(score for _, score in found) for side, found in plans.items()},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The best known plan of each heterogeneous instance, and whether the reference search stopped improving there.

Not a test. For each instance of benchmarks/placement.py's heterogeneous
generator, runs benchmarks/reference_search.py (an annealing that shares no
code with the engine) with two seeds at ten times the engine's move budget,
then with the same seeds at thirty times (and, up to --long-max-apps apps,
at a hundred times). The best plan of all runs is the instance's best known
plan: the yardstick of benchmarks/engine_ab.py's "vs best" column and of the
README. "Stopped improving" is read from the rows: the longer runs gain
nothing, or less than --settled (a fraction), over the best of the shorter.

Raw rows first (--out, JSON: one row per run with the instance, budget
multiple, seed, score and CPU seconds, then the best per instance); the
summary printed at the end is computed from them alone.
Usage: python benchmarks/reference_convergence.py [--sizes 80x20:1-12 200x20:1-6 2000x200:1 10000x1000:1]
       [--long-max-apps 80] [--seeds 7 8] [--out benchmarks/results/reference_convergence.json]
       python benchmarks/reference_convergence.py --from-runs a.json b.json --out merged.json   (no search)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import anneal_budget
from placement import make_heterogeneous  # benchmarks/, the script's own folder
from reference_search import plan_score, reference_search

SEEDS = (7, 8)


def parse_size(text: str) -> tuple[int, int, list[int]]:
    """'80x20:1-12' -> (80, 20, [1, ..., 12]); '2000x200:1' -> (2000, 200, [1])."""
    size, _, seeds = text.partition(":")
    apps, _, nodes = size.partition("x")
    first, _, last = (seeds or "1").partition("-")
    return int(apps), int(nodes), list(range(int(first), int(last or first) + 1))


def summary(rows: list[dict[str, Any]], settled: float) -> list[dict[str, Any]]:
    """Per instance: the best score, the best at each multiple, and whether the longest runs gained under `settled`."""
    instances: dict[str, dict[int, float]] = {}
    for row in rows:
        by_multiple = instances.setdefault(row["instance"], {})
        by_multiple[row["multiple"]] = min(by_multiple.get(row["multiple"], row["score"]), row["score"])
    out = []
    for instance, by_multiple in instances.items():
        multiples = sorted(by_multiple)
        best = min(by_multiple.values())
        shorter = min(by_multiple[m] for m in multiples[:-1]) if len(multiples) > 1 else None
        gain = None if shorter is None else (shorter - by_multiple[multiples[-1]]) / shorter
        out.append({"instance": instance, "best": best, "by_multiple": {str(m): by_multiple[m] for m in multiples},
                    "longest_gain": gain, "settled": gain is not None and gain < settled})
    return out


def best_known(path: Path) -> dict[str, float]:
    """{instance name: best known score} from this script's output (--out), the other benchmarks' yardstick."""
    return {entry["instance"]: entry["best"] for entry in json.loads(path.read_text(encoding="utf-8"))["best"]}


def save(path: Path, rows: list[dict[str, Any]], settled: float) -> None:
    """The raw runs and the summary computed from them."""
    path.write_text(json.dumps({"runs": rows, "best": summary(rows, settled)}, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["80x20:1-12", "200x20:1-6", "2000x200:1", "10000x1000:1"])
    parser.add_argument("--long-max-apps", type=int, default=80, help="also run 100x the budget up to this many apps")
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS), help="the reference's seeds")
    parser.add_argument("--settled", type=float, default=0.001, help="a longer run gaining less than this is settled")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--from-runs", type=Path, nargs="*", default=[],
                        help="no search: merge the runs of these earlier outputs (--out) and summarise them")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = [row for path in args.from_runs for row in json.loads(path.read_text())["runs"]]
    for size in [] if args.from_runs else args.sizes:
        app_count, node_count, seeds = parse_size(size)
        multiples = [10, 30] + ([100] if app_count <= args.long_max_apps else [])
        for instance_seed in seeds:
            raw_apps, raw_nodes = make_heterogeneous(app_count, node_count, instance_seed)
            apps, nodes = parse_apps(raw_apps), parse_nodes(raw_nodes)
            instance = f"{app_count}x{node_count} het #{instance_seed}"
            for multiple in multiples:
                moves = multiple * anneal_budget(app_count, 1.0, float("inf"), 0.0)
                for seed in args.seeds:
                    started = time.process_time()
                    plan = reference_search(apps, nodes, moves, seed=seed)
                    row = {"instance": instance, "multiple": multiple, "moves": moves, "seed": seed,
                           "score": round(plan_score(apps, plan, node_count), 6),
                           "cpu_s": round(time.process_time() - started, 2)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.out:  # after every run: a long search interrupted keeps what it found
                        save(args.out, rows, args.settled)
    if args.out:
        save(args.out, rows, args.settled)
    for entry in summary(rows, args.settled):
        gain = "-" if entry["longest_gain"] is None else f"{entry['longest_gain'] * 100:.3f}%"
        print(f"{entry['instance']:<22} best {entry['best']:>10.2f}  by budget {entry['by_multiple']}  "
              f"longest run's gain {gain}  {'settled' if entry['settled'] else 'NOT settled'}")


if __name__ == "__main__":
    main()

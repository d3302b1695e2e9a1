#!/usr/bin/env python3
"""Sharing benchmark: plans made with the cross-node score against plans made blind to it, scored with it.

Not a test. Nodes are grouped into hosts (the `example.com/host` label,
HOST_SIZE nodes per host; in the "one big host" instances, half the nodes on
one host and the others alone) that share memory bandwidth and the
last-level cache (share SHARE of the same-node score, sharing.py). For each instance,
measured side by side in one run (--repeat runs each, alternated):

- "blind": the engine without `sharing` (today's score, nodes independent);
- "sharing": the engine with it.

Both plans are scored with the shared score (sum_interference with sharing,
checked against the definition in tests/unit/plugins/module_utils/test_sharing.py),
next to the lower bound under it. CPU time is this process's, median of the
repeats; "cpu ratio" is sharing / blind, per alternated round, median.

Raw rows go to benchmarks/results/sharing.json; the table is printed from them.
Usage: python benchmarks/sharing.py [--repeat 3] [--out benchmarks/results/sharing.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place, sum_interference
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import parse_sharing
from placement import make_apps, make_heterogeneous, make_nodes

HOST_LABEL = "example.com/host"
HOST_SIZE = 4
SHARE = 0.5
SHARING = {"label": HOST_LABEL, "pressures": {"memory_bandwidth": SHARE, "llc": SHARE}}
RESULTS = Path(__file__).parent / "results" / "sharing.json"


def seed_four() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The seed's four apps on two 1-CPU workers of one host (the kind testbed)."""
    apps = [
        {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
        {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
        {"name": "mbw", "image": "pts/mbw", "type": "memory"},
        {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
    ]
    return apps, [{"name": f"worker{i}", "allocatable": {"cpu": "1"}} for i in (1, 2)]


def instances() -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    cases = [("seed 4x2", *seed_four())]
    for apps, nodes in (make_heterogeneous(200, 20, 1), make_heterogeneous(2000, 200, 1)):
        cases.append((f"heterogeneous {len(apps)}x{len(nodes)}", apps, nodes))
    apps = make_apps(10_000, seed=10_000)
    cases.append(("homogeneous 10000x1000", apps, make_nodes(1000, apps, tight=False)))
    for _, _, nodes in cases:
        for index, node in enumerate(nodes):
            node.setdefault("labels", {})[HOST_LABEL] = f"host-{index // HOST_SIZE}"
    # Unequal hosts: the first half of the nodes on one host, the other half each alone (no label).
    for app_count, node_count in ((200, 20), (2000, 200)):
        apps, nodes = make_heterogeneous(app_count, node_count, 2)
        for index, node in enumerate(nodes):
            if index < node_count // 2:
                node["labels"][HOST_LABEL] = "big-host"
        cases.append((f"one big host {app_count}x{node_count}", apps, nodes))
    return cases


def run(apps: list[dict[str, Any]], nodes: list[dict[str, Any]], sharing: dict[str, Any] | None) -> dict[str, Any]:
    started = time.process_time()
    plan = place(apps, nodes, sharing=sharing)
    cpu = time.process_time() - started
    shared = sum_interference(plan.apps, plan.assignment, parse_sharing(SHARING), plan.nodes)
    return {"cpu_s": cpu, "score_shared": shared, "score_same_node_only": sum_interference(plan.apps, plan.assignment),
            "method": plan.method, "lower_bound": plan.lower_bound, "assignment": plan.assignment}


def measure(repeat: int) -> list[dict[str, Any]]:
    rows = []
    for label, apps, nodes in instances():
        parse_apps(apps), parse_nodes(nodes)  # warm the parse caches once, for both sides alike
        rounds = []
        for index in range(repeat):
            order = (None, SHARING) if index % 2 == 0 else (SHARING, None)
            got = {("sharing" if sharing else "blind"): run(apps, nodes, sharing) for sharing in order}
            rounds.append(got)
        blind, shared = rounds[-1]["blind"], rounds[-1]["sharing"]
        rows.append({
            "instance": label, "host_size": HOST_SIZE, "sharing": SHARING, "apps": len(apps), "nodes": len(nodes),
            "blind_cpu_s": [r["blind"]["cpu_s"] for r in rounds],
            "sharing_cpu_s": [r["sharing"]["cpu_s"] for r in rounds],
            "blind_score_shared": blind["score_shared"], "sharing_score_shared": shared["score_shared"],
            "blind_score_same_node": blind["score_same_node_only"],
            "sharing_score_same_node": shared["score_same_node_only"],
            "lower_bound_shared": shared["lower_bound"], "blind_method": blind["method"],
            "sharing_method": shared["method"], "same_plan": blind["assignment"] == shared["assignment"],
            "deterministic": all(r["sharing"]["assignment"] == shared["assignment"] for r in rounds),
        })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    header = (f"{'instance':<24} {'blind (shared score)':>21} {'sharing':>10} {'bound':>10} {'gain':>7} "
              f"{'cpu blind':>10} {'cpu sharing':>12} {'ratio':>6}  same plan")
    lines = [header, "-" * len(header)]
    for row in rows:
        ratio = statistics.median(s / b for s, b in zip(row["sharing_cpu_s"], row["blind_cpu_s"], strict=True))
        blind, shared = row["blind_score_shared"], row["sharing_score_shared"]
        gain = (blind - shared) / blind if blind else 0.0
        lines.append(
            f"{row['instance']:<24} {blind:>21.2f} {shared:>10.2f} {row['lower_bound_shared']:>10.2f} {gain:>7.1%} "
            f"{statistics.median(row['blind_cpu_s']):>9.2f}s {statistics.median(row['sharing_cpu_s']):>11.2f}s "
            f"{ratio:>6.2f}  {row['same_plan']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--table-only", action="store_true", help="print the table of --out without measuring")
    args = parser.parse_args()
    if not args.table_only:
        rows = measure(args.repeat)
        args.out.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                        "rows": rows}, indent=1) + "\n")
    print(table(json.loads(args.out.read_text())["rows"]))


if __name__ == "__main__":
    main()

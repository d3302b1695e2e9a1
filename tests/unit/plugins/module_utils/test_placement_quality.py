"""How close the engine's plans come to the best plans known, at its default budget.

The yardstick is benchmarks/results/reference_convergence.json: for each of the
placement benchmark's heterogeneous 80 x 20 instances (the operator's cluster,
capacity binding), the best plan an independent annealing
(benchmarks/reference_search.py, no engine code) found with two seeds at 10, 30
and 100 times the engine's move budget. The engine is deterministic (fixed
seed), so its score on each instance is the same on every machine. The
bounds are issue 24's target for these instances: every plan within 1% of
the best known, and a mean at most 0.5% (docs/benchmarks.md, "Where the
budget is ample": mean 0.32%, worst 0.82% with ANNEAL_MAX_PER_REPLICA 2000).
With 1000 moves per replica, the budget before, the mean is 0.62% and the
worst 1.99% (#12; #2 at 1.03%), and this test fails; so does the schedule used
before the cold one (mean 0.97%, worst 2.80%; tried: ANNEAL_COLD_FROM set out
of reach).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place

REPO = Path(__file__).resolve().parents[4]
RESULTS = REPO / "benchmarks" / "results" / "reference_convergence.json"


@pytest.fixture(scope="module")
def heterogeneous() -> Any:
    """benchmarks/placement.py's make_heterogeneous (the benchmarks import each other by bare name)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from placement import make_heterogeneous
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return make_heterogeneous


def best_known(prefix: str) -> dict[int, float]:
    """{instance seed: best known score} for the instances named `prefix #N`."""
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["best"]
    return {int(row["instance"].rsplit("#", 1)[1]): row["best"] for row in rows
            if row["instance"].startswith(prefix + " #")}


def test_engine_stays_close_to_the_best_known_plans(heterogeneous: Any) -> None:
    best = best_known("80x20 het")
    assert sorted(best) == list(range(1, 13)), "the yardstick covers instances #1-12"
    above = {}
    for seed, reference in best.items():
        apps, nodes = heterogeneous(80, 20, seed)
        plan = place(apps, nodes)
        assert plan.method == "greedy+local-search+annealing"
        # The best known is a plan's score: the engine cannot be below the lower bound, and the
        # reference's plans are feasible, so the engine can match or beat them but rarely by much.
        assert plan.lower_bound <= plan.total_interference
        above[seed] = (plan.total_interference - reference) / reference
    assert statistics.mean(above.values()) <= 0.005, above
    assert max(above.values()) <= 0.01, above

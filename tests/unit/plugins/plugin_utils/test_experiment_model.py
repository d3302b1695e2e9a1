"""The experiment as the judge of the model: predicted scores per run, medians' intervals, correlations."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import summarize
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment_model import (
    median_interval,
    pearson,
    predicted_scores,
    spearman,
)
from hypothesis import given
from hypothesis import strategies as st

APPS: list[dict[str, Any]] = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
    {"name": "stress", "image": "pts/stressapptest", "profile": {"memory_bandwidth": 0.5, "cpu": 0.5}},
]
NODES = [{"name": n, "labels": {"host": "h1"}, "allocatable": {"cpu": "1"}} for n in ("w1", "w2")]


def run(policy: str, app: str, node: str | None, value: float, round_index: int, *, attempt: int = 1) -> dict[str, Any]:
    return {"round": round_index, "attempt": attempt, "policy": policy, "app": app, "node": node, "repeat": 0,
            "status": "succeeded", "superseded": False,
            "result": {"value": value, "better": "lower", "unit": "s", "wall_seconds": value}}


def test_each_run_is_predicted_from_its_neighbours_in_its_own_round_and_attempt() -> None:
    runs = [
        run("worst", "c-ray", "w1", 2.0, 1), run("worst", "stress", "w1", 2.0, 1), run("worst", "mbw", "w2", 2.0, 1),
        run("engine", "c-ray", "w1", 1.0, 2), run("engine", "mbw", "w2", 1.0, 2),
        run("engine", "c-ray", "w2", 1.0, 2, attempt=2),  # another attempt at round 2: never a neighbour
        run("engine", "stress", None, 1.0, 2),  # no pod: nothing to predict
    ]
    results = {"apps": APPS, "cluster": {"nodes": NODES}, "config": {}}
    # Same node: the dot product (c-ray . stress = 0.5); another node: nothing without sharing.
    assert predicted_scores(results, runs) == [0.5, 0.5, 0.0, 0.0, 0.0, 0.0, None]
    # Workers of one host that leak half of the memory bandwidth: mbw and stress meet across nodes.
    shared = {**results, "config": {"sharing": {"label": "host", "pressures": {"memory_bandwidth": 0.5}}}}
    assert predicted_scores(shared, runs) == [0.5, 0.5 + 0.25, 0.25, 0.0, 0.0, 0.0, None]
    # A node of no group shares nothing.
    alone = {**shared, "cluster": {"nodes": [NODES[0], {**NODES[1], "labels": {}}]}}
    assert predicted_scores(alone, runs)[2] == 0.0
    assert predicted_scores({"runs": runs}, runs) == [None] * len(runs)


def test_correlations_rank_and_scale() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    by_scale = pearson([1, 2, 3, 4], [10, 20, 30, 1000])
    assert by_scale is not None and by_scale < 0.9
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # Ties share their mean rank: ranks (1.5, 1.5, 3) against (1, 2, 3).
    assert spearman([0, 0, 1], [1, 2, 3]) == pytest.approx(statistics.correlation([1.5, 1.5, 3], [1, 2, 3]))
    assert spearman([0, 0, 0], [1, 2, 3]) is None
    assert pearson([1, 2], [1, 2]) is None


@given(st.lists(st.floats(min_value=0.1, max_value=10, allow_nan=False), min_size=1, max_size=12))
def test_the_median_lies_in_its_interval_and_the_interval_in_the_range(values: list[float]) -> None:
    interval = median_interval(values)
    assert interval is not None
    low, high = interval
    assert min(values) <= low <= statistics.median(values) <= high <= max(values)
    assert median_interval(values) == interval  # a fixed seed: the same report from the same results


def test_more_agreeing_repeats_give_a_narrower_interval() -> None:
    noisy = median_interval([1.0, 3.0, 1.2, 2.8, 2.0])
    steady = median_interval([2.0, 2.1, 1.9, 2.0, 2.05, 1.95, 2.0, 2.02, 1.98])
    assert noisy is not None and steady is not None
    assert steady[1] - steady[0] < (noisy[1] - noisy[0]) / 4
    assert median_interval([]) is None
    assert median_interval([1.7]) == (1.7, 1.7)


def test_the_summary_sets_the_prediction_beside_the_measurement() -> None:
    runs = [run("baseline", app, "w1", 1.0, i) for i, app in enumerate(("c-ray", "mbw", "stress"))]
    # Worse where the model predicts more: the slowdown follows the predicted score.
    runs += [run("worst", "c-ray", "w1", 1.5, 3), run("worst", "stress", "w1", 1.6, 3),
             run("worst", "mbw", "w2", 1.0, 3)]
    runs += [run("engine", "c-ray", "w1", 1.1, 4), run("engine", "stress", "w2", 1.2, 4),
             run("engine", "mbw", "w2", 1.9, 4)]
    summary = summarize({"apps": APPS, "cluster": {"nodes": NODES}, "config": {}, "runs": runs})
    rows = {(r["policy"], r["app"]): r for r in summary["rows"]}
    assert rows[("worst", "c-ray")]["predicted"] == 0.5
    assert rows[("engine", "mbw")]["predicted"] == 0.5
    assert summary["policies"]["worst"]["predicted"] == pytest.approx(1 / 3)
    # Scores 0.5, 0.5, 0, 0, 0.5, 0.5 against slowdowns 1.5, 1.6, 1.0, 1.1, 1.2, 1.9.
    assert summary["model"]["n"] == 6
    assert summary["model"]["spearman"] == pytest.approx(
        statistics.correlation([4.5, 4.5, 1.5, 1.5, 4.5, 4.5], [4, 5, 1, 2, 3, 6]))
    assert summary["model"]["pearson"] == pytest.approx(
        statistics.correlation([0.5, 0.5, 0, 0, 0.5, 0.5], [1.5, 1.6, 1.0, 1.1, 1.2, 1.9]))


def test_with_declared_demands_the_prediction_counts_the_time_sharing() -> None:
    # Each app keeps one core busy on 1-CPU workers: a worker with two is shared (x2) and its pair takes turns.
    apps: list[dict[str, Any]] = [{**app, "cpu_demand": "1"} for app in APPS]
    runs = [run("worst", "c-ray", "w1", 2.0, 1), run("worst", "stress", "w1", 2.0, 1),
            run("worst", "mbw", "w2", 2.0, 1)]
    results: dict[str, Any] = {"apps": apps, "cluster": {"nodes": NODES}, "config": {}}
    # c-ray and stress: 2 * (1 + 0) - 1, never at the same instant; mbw alone on w2: 0.
    assert predicted_scores(results, runs) == [pytest.approx(1.0), pytest.approx(1.0), 0.0]
    # With a memory share across the host, mbw meets stress for the half of the time stress runs: 0.6 * 0.5 * 0.5.
    results["config"] = {"sharing": {"label": "host", "pressures": {"memory_bandwidth": 0.6}}}
    scores = predicted_scores(results, runs)
    assert scores[2] == pytest.approx(0.15)
    assert scores[1] == pytest.approx(2 * (1 + 0.6 * 0.5 * 1.0) - 1)

"""The isolation matrices, computed from a results.json of playbooks/isolation.yml alone."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import matrices, mean_pressure

NODES = ["w1", "w2"]


def series(node: str, resource: str, values: list[tuple[float, float]]) -> dict[str, Any]:
    return {"metric": {"node": node, "resource": resource}, "values": [[t, str(v)] for t, v in values]}


def run(stressor: str, node: str, levels: dict[tuple[str, str], list[float]], start: float = 100.0) -> dict[str, Any]:
    """A run whose samples are 5 s apart from start-10; the window starts at start+10."""
    out = []
    for (n, r), values in levels.items():
        out.append(series(n, r, [(start - 10 + 5 * i, v) for i, v in enumerate(values)]))
    return {"stressor": stressor, "node": node, "stressor_started": start, "window": [start + 10, start + 30],
            "series": out}


def idle(node: str) -> dict[tuple[str, str], list[float]]:
    return {(node, r): [0.0] * 9 for r in ("cpu", "llc", "memory_bandwidth")}


def test_the_matrix_row_is_the_stressed_worker_and_the_column_the_observed_one() -> None:
    # Stressed w1 from t=100: 0 before, rising, 0.8 inside the window; w2 stays near idle.
    cpu_on_w1 = {**idle("w1"), **idle("w2"),
                 ("w1", "cpu"): [0, 0, 0.3, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8],
                 ("w2", "cpu"): [0, 0, 0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]}
    cpu_on_w2 = {**idle("w1"), **idle("w2"), ("w2", "cpu"): [0, 0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]}
    results = {"nodes": NODES, "config": {"rise_margin": 0.2},
               "runs": [run("none", "w1", {**idle("w1"), **idle("w2")}), run("cpu", "w1", cpu_on_w1),
                        run("cpu", "w2", cpu_on_w2)]}
    out = matrices(results)
    assert out["stressors"] == ["cpu"]
    assert out["matrix"]["cpu"]["w1"] == {"w1": pytest.approx(0.8), "w2": pytest.approx(0.1)}
    assert out["matrix"]["cpu"]["w2"] == {"w1": 0.0, "w2": pytest.approx(0.9)}
    # Sample at t=110 (index 4) is the first in the window, but the rise is counted from the start:
    # at t=105 w1 leads w2 by 0.7 >= 0.2 (t=100: 0.3 vs 0 already leads).
    assert out["first_rise_s"]["cpu"]["w1"] == 0.0
    # No round_ends recorded: the round-based rise is unknown.
    assert out["first_rise_round_s"]["cpu"]["w1"] is None
    assert out["baseline"]["w2"]["memory_bandwidth"] == 0.0
    assert out["response"]["cpu"]["w1"]["w2"]["cpu"] == pytest.approx(0.1)


def test_no_lead_is_no_rise_and_a_missing_series_is_none() -> None:
    levels = {**idle("w1"), **idle("w2"), ("w1", "memory_bandwidth"): [0.1] * 9,
              ("w2", "memory_bandwidth"): [0.1] * 9}
    del levels[("w2", "llc")]
    out = matrices({"nodes": NODES, "runs": [run("memory_bandwidth", "w1", levels)]})
    assert out["first_rise_s"]["memory_bandwidth"]["w1"] is None
    assert out["response"]["memory_bandwidth"]["w1"]["w2"]["llc"] is None


def test_means_use_the_window_only() -> None:
    r = run("cpu", "w1", {("w1", "cpu"): [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5]})
    assert mean_pressure(r, "w1", "cpu") == pytest.approx(0.5)


@pytest.mark.parametrize(("results", "message"), [
    ({"runs": []}, "missing field 'nodes'"),
    ({"nodes": NODES, "runs": [{"stressor": "cpu", "node": "w1", "window": [0, 1]}]}, "run 0 has no field 'series'"),
])
def test_malformed_results_name_the_field(results: dict[str, Any], message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        matrices(results)


def test_the_round_based_rise_is_read_from_the_round_that_reported_it() -> None:
    levels = {("w1", "cpu"): [0, 0, 0, 0, 0.9, 0.9, 0.9, 0.9, 0.9], ("w2", "cpu"): [0.0] * 9}
    r = run("cpu", "w1", levels)
    # Sample at t=110 shows the round that ended at t=107.5.
    r["round_ends"] = [{"metric": {"node": "w1"}, "values": [[110.0, "107.5"]]}]
    out = matrices({"nodes": NODES, "runs": [r]})
    assert out["first_rise_s"]["cpu"]["w1"] == 10.0
    assert out["first_rise_round_s"]["cpu"]["w1"] == 7.5


def test_a_sample_of_a_round_that_ended_before_the_stressor_started_is_not_its_rise() -> None:
    levels = {("w1", "cpu"): [0, 0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9], ("w2", "cpu"): [0.0] * 9}
    r = run("cpu", "w1", levels)
    # t=100 (index 2) still shows a round that ended at 98 (noise before the start); t=105 the round ending at 103.
    r["round_ends"] = [{"metric": {"node": "w1"}, "values": [[100.0, "98"], [105.0, "103"]]}]
    out = matrices({"nodes": NODES, "runs": [r]})
    assert out["first_rise_s"]["cpu"]["w1"] == 5.0
    assert out["first_rise_round_s"]["cpu"]["w1"] == 3.0


def test_the_share_is_the_rise_another_worker_sees_over_the_stressed_workers_own() -> None:
    """w1 stressed: its cpu rises 0.8 above a 0.1 baseline and w2's 0.2 above 0: share 0.25. w2 stressed: w2 rises
    0.9, w1 0.45 above its baseline: 0.5. The median of the two ordered pairs is 0.375."""
    base = {**idle("w1"), **idle("w2"), ("w1", "cpu"): [0.1] * 9}
    on_w1 = {**base, ("w1", "cpu"): [0.9] * 9, ("w2", "cpu"): [0.2] * 9}
    on_w2 = {**base, ("w1", "cpu"): [0.55] * 9, ("w2", "cpu"): [0.9] * 9}
    out = matrices({"nodes": NODES, "runs": [run("none", "w1", base), run("cpu", "w1", on_w1),
                                             run("cpu", "w2", on_w2)]})
    assert out["share_pairs"]["cpu"] == {"w1": {"w2": pytest.approx(0.25)}, "w2": {"w1": pytest.approx(0.5)}}
    assert out["shares"]["cpu"] == pytest.approx(0.375)


def test_a_share_is_clipped_to_one_and_a_stressor_that_did_not_rise_gives_none() -> None:
    # memory_bandwidth on w1: w1 rises 0.1, w2 0.3 (more than w1 itself: clipped to 1).
    # llc on w1: w1 rises 0.01 only, below SHARE_MIN_RISE: no share.
    levels = {**idle("w1"), **idle("w2"), ("w1", "memory_bandwidth"): [0.1] * 9,
              ("w2", "memory_bandwidth"): [0.3] * 9, ("w1", "llc"): [0.01] * 9, ("w2", "llc"): [0.2] * 9}
    out = matrices({"nodes": NODES, "runs": [run("none", "w1", {**idle("w1"), **idle("w2")}),
                                             run("memory_bandwidth", "w1", levels), run("llc", "w1", levels)]})
    assert out["shares"]["memory_bandwidth"] == 1.0
    assert out["shares"]["llc"] is None
    assert out["share_pairs"]["llc"] == {"w1": {"w2": None}}

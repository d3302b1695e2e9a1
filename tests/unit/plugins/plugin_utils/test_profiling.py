"""Measured profiles: pair scores from runs, the fit on data with a known answer, applying them."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dot, profile_from_mapping
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import ExperimentError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import (
    apply_profiles,
    fit_profiles,
    pair_key,
    pair_scores,
)

APPS = [
    {"name": "c1", "image": "x", "type": "cpu"},
    {"name": "c2", "image": "x", "type": "cpu"},
    {"name": "m1", "image": "x", "type": "memory"},
    {"name": "m2", "image": "x", "type": "memory"},
]


def scores_of(profiles: dict[str, dict[str, float]]) -> dict[str, float]:
    names = list(profiles)
    return {
        pair_key(a, b): dot(profile_from_mapping(profiles[a]), profile_from_mapping(profiles[b]))
        for i, a in enumerate(names)
        for b in names[i + 1:]
    }


def test_the_fit_recovers_scores_that_some_profiles_produce_exactly() -> None:
    truth = {
        "c1": {"cpu": 0.9, "memory_bandwidth": 0.2},
        "c2": {"cpu": 0.8},
        "m1": {"memory_bandwidth": 0.7, "llc": 0.3},
        "m2": {"memory_bandwidth": 0.6, "cpu": 0.1},
    }
    fit = fit_profiles(APPS, scores_of(truth))
    assert fit["rmse"] < 1e-3
    assert fit["max_error"] < 3e-3
    fitted = {p["pair"]: p["fitted"] for p in fit["pairs"]}
    assert fitted[pair_key("c1", "c2")] == pytest.approx(0.72, abs=3e-3)
    assert fitted[pair_key("c2", "m1")] == pytest.approx(0.0, abs=3e-3)
    # Started from the declared types, the pressures keep their resource names.
    assert fit["profiles"]["c2"].get("cpu", 0) > 0.5
    assert fit["profiles"]["m1"].get("memory_bandwidth", 0) > 0.3


def test_scores_no_profiles_can_produce_leave_a_reported_error() -> None:
    # Pressures are at most 1 on each of the 5 resources, so no pair can score above 5: a measured 6 stays 1 off.
    fit = fit_profiles(APPS[:2], {pair_key("c1", "c2"): 6.0})
    assert fit["max_error"] == pytest.approx(1.0, abs=1e-3)
    assert fit["rmse"] == pytest.approx(1.0, abs=1e-3)
    assert all(0.0 <= v <= 1.0 for profile in fit["profiles"].values() for v in profile.values())


def test_a_pair_naming_an_unknown_app_is_an_error() -> None:
    with pytest.raises(ExperimentError, match="'c1\\+zz' does not name two apps"):
        fit_profiles(APPS, {"c1+zz": 1.0})


def run(policy: str, app: str, value: float, pair: list[str] | None = None, repeat: int = 0) -> dict[str, Any]:
    item: dict[str, Any] = {
        "policy": policy, "app": app, "repeat": repeat, "status": "succeeded",
        "result": {"value": value, "better": "lower", "wall_seconds": value},
    }
    if pair:
        item["pair"] = pair
    return item


def test_pair_score_is_the_median_over_repeats_of_the_mean_extra_slowdown() -> None:
    runs = [
        run("baseline", "a", 1.0), run("baseline", "b", 2.0),
        run("pair", "a", 2.0, ["a", "b"], 0), run("pair", "b", 4.0, ["a", "b"], 0),   # extra 1 and 1 -> 1
        run("pair", "a", 1.0, ["a", "b"], 1), run("pair", "b", 2.0, ["a", "b"], 1),   # 0 -> 0
        run("pair", "a", 1.5, ["a", "b"], 2), run("pair", "b", 3.0, ["a", "b"], 2),   # 0.5
    ]
    assert pair_scores({"runs": runs}) == {"a+b": pytest.approx(0.5)}


def test_pair_with_a_failed_half_gives_no_score() -> None:
    failed = {"policy": "pair", "app": "b", "repeat": 0, "pair": ["a", "b"], "status": "failed", "result": None}
    runs = [run("baseline", "a", 1.0), run("baseline", "b", 2.0), run("pair", "a", 2.0, ["a", "b"]), failed]
    assert pair_scores({"runs": runs}) == {}


def test_only_apps_that_opt_in_get_the_measured_profile() -> None:
    apps = [{**APPS[0], "profile_from": "measured"}, APPS[2]]
    applied = apply_profiles(apps, {"c1": {"cpu": 0.4, "memory_bandwidth": 0.6}, "m1": {"cpu": 1.0}})
    assert applied[0]["profile"] == {"cpu": 0.4, "memory_bandwidth": 0.6}
    assert "profile_from" not in applied[0]
    assert applied[1] == APPS[2]


def test_an_app_that_opts_in_without_a_measured_profile_is_named() -> None:
    with pytest.raises(ExperimentError, match=r"apps\[0\] \(c1\): field 'profile_from': no measured profile"):
        apply_profiles([{**APPS[0], "profile_from": "measured"}], {})

"""Observed profiles from results.json (plugin_utils/observed.py), on synthetic probe series."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.filter.observed_summary import observed_summary
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.observed import (
    RESOURCES,
    classify,
    cross_check,
    observe_cases,
    observed_profiles,
    profiles_file,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import (
    apply_profiles,
    profile_sources,
)
from hypothesis import given
from hypothesis import strategies as st

NODES = ["w1", "w2"]
IDLE = {"w1": {"cpu": 0.02, "llc": 0.05, "memory_bandwidth": 0.03},
        "w2": {"cpu": 0.01, "llc": 0.04, "memory_bandwidth": 0.02}}


def run(stressor: str, repeat: int, pressures: dict[str, dict[str, float]], node: str = "w1") -> dict[str, Any]:
    """A run whose every sample in the window 10..40 s has the given pressure (node -> resource -> value)."""
    series = [{"metric": {"node": n, "resource": r}, "values": [[t, str(v)] for t in (10, 20, 30, 40)]}
              for n, by_resource in pressures.items() for r, v in by_resource.items()]
    return {"stressor": stressor, "node": node, "repeat": repeat, "window": [10, 40], "series": series,
            "stressor_started": 0}


def loaded(extra: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {n: {r: IDLE[n][r] + extra.get(n, {}).get(r, 0.0) for r in RESOURCES} for n in NODES}


def results(repeats: list[dict[str, dict[str, dict[str, float]]]], **config: Any) -> dict[str, Any]:
    runs = []
    for index, apps in enumerate(repeats, start=1):
        runs.append(run("none", index, IDLE))
        runs += [run(app, index, loaded(extra)) for app, extra in apps.items()]
    return {"nodes": NODES, "config": config, "runs": runs}


# A busy loop: CPU on its own worker only. A memory streamer: CPU on its own
# worker and memory bandwidth on the other (the same memory bus, at the same instant).
BURN = {"w1": {"cpu": 0.8}}
STREAM = {"w1": {"cpu": 0.2, "llc": 0.02}, "w2": {"memory_bandwidth": 0.25, "llc": 0.12}}


def test_profiles_are_the_rises_over_the_idle_window_cpu_on_its_worker_memory_anywhere() -> None:
    computed = observed_profiles(results([{"burn": BURN, "stream": STREAM}, {"burn": BURN, "stream": STREAM}]))
    burn, stream = computed["apps"]["burn"], computed["apps"]["stream"]
    assert burn["profile"] == {"cpu": 0.8, "llc": 0.0, "memory_bandwidth": 0.0}
    assert stream["profile"] == {"cpu": 0.2, "llc": 0.12, "memory_bandwidth": 0.25}
    assert (burn["class"], stream["class"]) == ("cpu", "memory")
    assert burn["repeats"] == stream["repeats"] == 2 and computed["repeats"] == 2
    assert computed["converged"] is True
    assert profiles_file(computed) == {
        "observed_profiles": {"burn": {"cpu": 0.8}, "stream": {"cpu": 0.2, "llc": 0.12, "memory_bandwidth": 0.25}},
        "observed_profiles_detail": {
            "burn": {"spread": {"cpu": 0.0, "llc": 0.0, "memory_bandwidth": 0.0}, "repeats": 2, "class": "cpu"},
            "stream": {"spread": {"cpu": 0.0, "llc": 0.0, "memory_bandwidth": 0.0}, "repeats": 2, "class": "memory"},
        },
    }


def test_a_wide_spread_or_too_few_repeats_is_not_converged() -> None:
    noisy = {"w1": {"cpu": 0.4}}
    computed = observed_profiles(results([{"burn": BURN}, {"burn": noisy}], spread_max=0.1))
    assert computed["apps"]["burn"]["spread"]["cpu"] == 0.4
    assert computed["apps"]["burn"]["profile"]["cpu"] == 0.6  # the median of 0.8 and 0.4
    assert computed["converged"] is False
    assert observed_profiles(results([{"burn": BURN}, {"burn": noisy}], spread_max=0.5))["converged"] is True
    assert observed_profiles(results([{"burn": BURN}], min_repeats=2))["converged"] is False
    assert observed_profiles(results([{"burn": BURN}], min_repeats=1))["converged"] is True


def test_the_class_is_the_dominant_resource() -> None:
    assert classify({"cpu": 0.82, "llc": 0.14, "memory_bandwidth": 0.01}) == "cpu"
    assert classify({"cpu": 0.3, "llc": 0.31}) == "memory"
    assert classify({"cpu": 0.05, "memory_bandwidth": 0.09}) == "idle"
    assert classify({"cpu": 0.05}, {"active_min": 0.01}) == "cpu"


def test_the_cpu_of_another_worker_does_not_count() -> None:
    computed = observed_profiles(results([{"quiet": {"w2": {"cpu": 0.9}}}], min_repeats=1))
    assert computed["apps"]["quiet"]["profile"]["cpu"] == 0.0
    assert computed["apps"]["quiet"]["class"] == "idle"


def test_an_app_run_without_an_idle_window_in_its_repeat_is_an_error() -> None:
    data = results([{"burn": BURN}])
    data["runs"][1]["repeat"] = 2
    with pytest.raises(PlacementError, match=r"run 1 \(burn\) has no idle run before it in repeat 2"):
        observed_profiles(data)


@pytest.mark.parametrize("value", [-0.1, "0.1", True, None])
def test_a_bad_setting_is_an_error_naming_it(value: object) -> None:
    with pytest.raises(PlacementError, match=r"config field 'spread_max': expected a number >= 0"):
        observed_profiles(results([{"burn": BURN}], spread_max=value))


pressure = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
extra = st.fixed_dictionaries({n: st.fixed_dictionaries({r: pressure for r in RESOURCES}) for n in NODES})


@given(st.lists(extra, min_size=1, max_size=5), st.floats(min_value=0.01, max_value=1.0))
def test_profiles_lie_between_the_repeats_and_the_spread_decides(repeats: list[Any], spread_max: float) -> None:
    computed = observed_profiles(results([{"app": r} for r in repeats], spread_max=spread_max, min_repeats=1))
    entry = computed["apps"]["app"]
    for resource in RESOURCES:
        rises = entry["rises"][resource]
        assert len(rises) == len(repeats)
        assert all(0.0 <= v <= 1.0 for v in rises)
        assert min(rises) - 1e-3 <= entry["profile"][resource] <= max(rises) + 1e-3
        assert entry["spread"][resource] == pytest.approx(max(rises) - min(rises), abs=1e-3)
    assert computed["converged"] == all(s <= spread_max + 1e-9 for s in entry["spread"].values())
    assert entry["class"] == classify(entry["profile"])


def test_cases_run_each_app_as_deployed_with_the_workload_loop_by_default() -> None:
    apps: list[dict[str, Any]] = [
        {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
        {"name": "burner", "image": "pts/mbw", "type": "memory", "command": ["bash", "-c", "while :; do :; done"],
         "env": {"A": 1, "B": True}, "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}},
    ]
    cases = observe_cases(apps, "w1", image_refs={"pts/c-ray": "pts/c-ray:h-1"}, command=["loop"],
                          cpu_request="500m", memory_limit="768Mi")
    assert cases == [
        {"stressor": "none", "node": "w1", "pod": "observe-idle"},
        {"stressor": "c-ray", "node": "w1", "pod": "observe-c-ray", "image": "pts/c-ray:h-1", "command": ["loop"],
         "env": {}, "cpu_request": "500m", "memory_limit": "768Mi"},
        {"stressor": "burner", "node": "w1", "pod": "observe-burner", "image": "pts/mbw",
         "command": ["bash", "-c", "while :; do :; done"], "env": {"A": "1", "B": "true"}, "cpu_request": "1",
         "memory_limit": "1Gi"},
    ]
    with pytest.raises(PlacementError, match=r"apps\[0\] \(None\): field 'name': missing or not a string"):
        observe_cases([{"image": "x"}], "w1", command=["loop"], cpu_request="1", memory_limit="1Gi")


def test_observed_profiles_replace_the_declared_one_and_fall_back_when_missing() -> None:
    apps = [
        {"name": "burner", "image": "x", "type": "memory", "profile_from": "observed"},
        {"name": "new", "image": "x", "type": "memory", "profile_from": "Observed"},
        {"name": "fitted", "image": "x", "type": "cpu", "profile_from": "measured"},
        {"name": "plain", "image": "x", "type": "cpu"},
    ]
    observed = {"burner": {"cpu": 0.8}}
    measured = {"fitted": {"cpu": 0.5}}
    applied = apply_profiles(apps, measured, observed)
    assert [a.get("profile") for a in applied] == [{"cpu": 0.8}, None, {"cpu": 0.5}, None]
    assert all("profile_from" not in a for a in applied)
    assert applied[1] == {"name": "new", "image": "x", "type": "memory"}
    assert profile_sources(apps, measured, observed) == {
        "burner": "observed", "new": "declared (no observed)", "fitted": "measured", "plain": "declared",
    }
    with pytest.raises(Exception, match=r"apps\[0\] \(burner\): field 'profile_from': expected one of measured, "
                                        r"observed, got 'guessed'"):
        apply_profiles([{**apps[0], "profile_from": "guessed"}], {}, {})


def test_the_cross_check_sets_each_measured_pair_beside_the_dot_product_of_the_observed_profiles() -> None:
    profiles = {"a": {"cpu": 0.8}, "b": {"cpu": 0.5, "llc": 0.2}, "c": {"memory_bandwidth": 1.0, "llc": 0.5}}
    scores = {"a+b": 0.5, "a+c": 0.1, "b+c": 0.2, "a+unobserved": 3.0}
    checked = cross_check(profiles, scores)
    assert checked["pairs"] == [
        {"pair": "a+b", "predicted": 0.4, "measured": 0.5},
        {"pair": "a+c", "predicted": 0.0, "measured": 0.1},
        {"pair": "b+c", "predicted": 0.1, "measured": 0.2},
    ]
    assert checked["spearman"] == pytest.approx(1.0)
    assert checked["pearson"] == pytest.approx(1.0)
    # Fewer than 3 pairs: no correlation.
    assert cross_check(profiles, {"a+b": 0.5})["spearman"] is None


def test_the_summary_filter_adds_the_cross_check_only_with_a_pairwise_run() -> None:
    data = results([{"burn": BURN, "stream": STREAM}, {"burn": BURN, "stream": STREAM}])
    assert "cross_check" not in observed_summary(data)
    pairwise = {"runs": [
        {"policy": "baseline", "status": "succeeded", "app": app, "result": {"value": 10.0, "better": "lower"}}
        for app in ("burn", "stream")
    ] + [
        {"policy": "pair", "status": "succeeded", "app": app, "pair": ["burn", "stream"], "repeat": 1,
         "result": {"value": 15.0, "better": "lower"}} for app in ("burn", "stream")
    ]}
    summary = observed_summary(data, pairwise)
    assert summary["file"]["observed_profiles"]["burn"] == {"cpu": 0.8}
    assert summary["cross_check"]["pairs"] == [{"pair": "burn+stream", "predicted": 0.16, "measured": 0.5}]

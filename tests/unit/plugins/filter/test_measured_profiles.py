"""measured_profiles and fit_profiles filters: measured pressure changes the engine's plan."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.fit_profiles import fit_profiles
from ansible_collections.interference.orchestrator.plugins.filter.measured_profiles import measured_profiles
from ansible_collections.interference.orchestrator.plugins.filter.place import place

NODES = ["w1", "w2"]
APPS = [
    {"name": "c1", "image": "x", "type": "cpu", "profile_from": "measured"},
    {"name": "c2", "image": "x", "type": "cpu", "profile_from": "measured"},
    {"name": "m1", "image": "x", "type": "memory", "profile_from": "measured"},
    {"name": "m2", "image": "x", "type": "memory", "profile_from": "measured"},
]


def together(placed: list[dict[str, Any]]) -> set[frozenset[str]]:
    nodes: dict[str, set[str]] = {}
    for app in placed:
        nodes.setdefault(app["nodes"][0], set()).add(app["name"])
    return {frozenset(names) for names in nodes.values()}


def test_measured_profiles_that_differ_from_the_declared_types_change_the_plan() -> None:
    declared = together(place([{k: v for k, v in a.items() if k != "profile_from"} for a in APPS], NODES))
    assert declared == {frozenset({"c1", "m1"}), frozenset({"c2", "m2"})} or declared == {
        frozenset({"c1", "m2"}), frozenset({"c2", "m1"})
    }
    # Measured: c1 and m1 fight over the CPU, c2 and m2 over memory bandwidth.
    measured = {
        "c1": {"cpu": 1.0}, "m1": {"cpu": 0.9},
        "c2": {"memory_bandwidth": 1.0}, "m2": {"memory_bandwidth": 0.8},
    }
    plan = together(place(measured_profiles(APPS, measured), NODES))
    assert plan == {frozenset({"c1", "c2"}), frozenset({"m1", "m2"})} or plan == {
        frozenset({"c1", "m2"}), frozenset({"m1", "c2"})
    }
    assert frozenset({"c1", "m1"}) not in plan
    assert plan != declared


def test_an_app_asking_for_a_profile_nobody_measured_fails_with_its_name() -> None:
    with pytest.raises(AnsibleFilterError, match=r"apps\[0\] \(c1\): field 'profile_from'"):
        measured_profiles(APPS, {})


def test_fit_profiles_filter_turns_a_profiling_run_into_profiles_and_an_error() -> None:
    def run(policy: str, app: str, value: float, pair: list[str] | None = None) -> dict[str, Any]:
        return {"policy": policy, "app": app, "repeat": 0, "pair": pair, "status": "succeeded",
                "result": {"value": value, "better": "lower", "wall_seconds": value}}

    runs = [run("baseline", a, 1.0) for a in ("c1", "c2", "m1")]
    runs += [run("pair", "c1", 2.0, ["c1", "c2"]), run("pair", "c2", 2.0, ["c1", "c2"])]
    runs += [run("pair", "c1", 1.0, ["c1", "m1"]), run("pair", "m1", 1.0, ["c1", "m1"])]
    fit = fit_profiles({"runs": runs}, APPS[:3])
    assert fit["scores"] == {"c1+c2": 1.0, "c1+m1": 0.0}
    assert fit["rmse"] < 0.01
    assert set(fit["profiles"]) == {"c1", "c2", "m1"}

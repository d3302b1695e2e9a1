"""The pod contract: the profile annotation the apps role writes is the profile the schedulers read back."""

from __future__ import annotations

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    CPU_DEMAND_ANNOTATION,
    PROFILE_ANNOTATION,
    TYPE_LABEL,
    cpu_demand_annotation,
    pod_cpu_demand,
    pod_profile,
    profile_annotation,
    profile_from_annotation,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_app


@pytest.mark.parametrize(
    ("item", "annotation", "type_label"),
    [
        ({"type": "cpu"}, '{"cpu":1.0}', "cpu"),
        ({"type": "Memory"}, '{"memory_bandwidth":1.0}', "memory"),
        ({"profile": {"disk_io": 1, "llc": 0.5}}, '{"llc":0.5,"disk_io":1.0}', "custom"),
        ({"type": "cpu", "profile": {"network_io": 0.25}}, '{"network_io":0.25}', "cpu"),
    ],
)
def test_annotation_round_trips_the_engines_profile(item: dict[str, object], annotation: str, type_label: str) -> None:
    app = parse_app(0, {"name": "a", "image": "x", **item})
    assert profile_annotation(app.profile) == annotation
    assert app.type_label == type_label
    assert profile_from_annotation(annotation) == app.profile
    assert pod_profile({PROFILE_ANNOTATION: annotation}, {TYPE_LABEL: type_label}) == app.profile


@pytest.mark.parametrize("raw", [None, "", "not json", "[1]", '{"gpu": 1}', '{"cpu": 2}', '{"cpu": true}'])
def test_invalid_annotations_are_ignored(raw: str | None) -> None:
    assert profile_from_annotation(raw) is None


def test_type_label_is_the_fallback_and_custom_alone_says_nothing() -> None:
    cpu = profile_from_annotation('{"cpu":1}')
    assert pod_profile({PROFILE_ANNOTATION: "oops"}, {TYPE_LABEL: "CPU"}) == cpu
    assert pod_profile({}, {TYPE_LABEL: "custom"}) is None
    assert pod_profile({}, {}) is None


@pytest.mark.parametrize(("cpu_demand", "annotation"), [("1500m", "1500m"), (2, "2000m"), ("0.25", "250m")])
def test_the_cpu_demand_annotation_round_trips_the_engines_demand(cpu_demand: object, annotation: str) -> None:
    app = parse_app(0, {"name": "a", "image": "x", "type": "cpu", "cpu_demand": cpu_demand})
    assert cpu_demand_annotation(app.cpu_demand_millicores) == annotation
    assert pod_cpu_demand({CPU_DEMAND_ANNOTATION: annotation}) == app.cpu_demand_millicores


@pytest.mark.parametrize("raw", [None, "", "1", "1.5", "-1m", "1500 m", "1e3m", "1500M", "9999999999m", "m"])
def test_a_cpu_demand_annotation_in_another_form_demands_nothing(raw: str | None) -> None:
    assert pod_cpu_demand({} if raw is None else {CPU_DEMAND_ANNOTATION: raw}) == 0

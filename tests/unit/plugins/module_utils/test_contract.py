"""The pod contract: the profile annotation the apps role writes is the profile the schedulers read back."""

from __future__ import annotations

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import (
    PROFILE_ANNOTATION,
    TYPE_LABEL,
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

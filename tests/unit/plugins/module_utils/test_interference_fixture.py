"""The interference numbers of the engine match the shared fixture.

tests/fixtures/interference_cases.json is also read by the Go plugin
(scheduler-plugins/pkg/interference), so the engine that plans placements and
the InterferenceAware plugin of kube-scheduler give the same added
interference for the same pods. A pod's profile is read as the plugin reads
it from the cluster: the `interference.orchestrator/profile` annotation (JSON,
validated as the engine validates an app's `profile`), else the
`interference.orchestrator/type` label.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    PRESSURE_DIMENSIONS,
    TYPE_PROFILES,
    Profile,
    dot,
    node_interference,
    profile_for_type,
    profile_from_mapping,
)

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "interference_cases.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]
ANNOTATION = "interference.orchestrator/profile"
TYPE_LABEL = "interference.orchestrator/type"


def pod_profile(pod: dict[str, Any]) -> Profile | None:
    """The pod's profile, or None when it has no usable one (the plugin is then neutral)."""
    annotations = pod.get("annotations") or {}
    if ANNOTATION in annotations:
        try:
            mapping = json.loads(annotations[ANNOTATION])
        except ValueError:
            return None
        if not isinstance(mapping, dict) or not mapping:
            return None
        for key, value in mapping.items():
            if key not in PRESSURE_DIMENSIONS:
                return None
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                return None
        return profile_from_mapping(mapping)
    type_label = (pod.get("labels") or {}).get(TYPE_LABEL)
    if type_label is None or type_label.lower() not in TYPE_PROFILES:
        return None
    return profile_for_type(type_label)


def test_fixture_has_cases_of_every_kind() -> None:
    expected = [case["expected"] for case in CASES]
    assert None in expected
    assert any(value and value > 0 for value in expected)
    assert 0.0 in expected


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_added_interference_matches_the_fixture(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    if case["expected"] is None:
        assert profile is None
        return
    assert profile is not None
    others = [p for p in map(pod_profile, case["node_pods"]) if p is not None]
    # The plugin's formula (sum of dot products with the pods already there) ...
    added = sum(dot(profile, other) for other in others)
    assert math.isclose(added, case["expected"], abs_tol=1e-9)
    # ... is the increase of the engine's node interference.
    increase = node_interference([*others, profile]) - node_interference(others)
    assert math.isclose(increase, case["expected"], abs_tol=1e-9)

"""The interference numbers of the engine match the shared fixture.

tests/fixtures/interference_cases.json is also read by the Go plugin
(scheduler-plugins/pkg/interference), so the engine that plans placements and
the InterferenceAware plugin of kube-scheduler give the same added
interference for the same pods. A pod's profile is read by the pod contract
(plugins/module_utils/contract.py, which the extender uses): a valid
`interference.orchestrator/profile` annotation, else the
`interference.orchestrator/type` label.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils import contract
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    Profile,
    dot,
    node_interference,
)

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "interference_cases.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]


def pod_profile(pod: dict[str, Any]) -> Profile | None:
    """The pod's profile as the extender reads it (the pod contract), None when it has no usable one."""
    return contract.pod_profile(pod.get("annotations") or {}, pod.get("labels") or {})


def test_fixture_has_cases_of_every_kind() -> None:
    expected = [case["expected"] for case in CASES]
    assert None in expected
    assert any(value and value > 0 for value in expected)
    assert 0.0 in expected


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_added_interference_matches_the_fixture(case: dict[str, Any]) -> None:
    profile = pod_profile(case["pod"])
    if case["expected"] is None:
        # Neutral: no profile, or one that presses on nothing (`{}`, what the
        # apps role writes for an all-zero profile), which adds zero everywhere.
        assert profile is None or not any(profile)
        return
    assert profile is not None
    others = [p for p in map(pod_profile, case["node_pods"]) if p is not None]
    # The plugin's formula (sum of dot products with the pods already there) ...
    added = sum(dot(profile, other) for other in others)
    assert math.isclose(added, case["expected"], abs_tol=1e-9)
    # ... is the increase of the engine's node interference.
    increase = node_interference([*others, profile]) - node_interference(others)
    assert math.isclose(increase, case["expected"], abs_tol=1e-9)

"""schema.json_size, the size check every app item goes through: json.dumps' length, and the field of bad data.

Property tests: for plain JSON data it is exactly what json.dumps writes (or,
past the limit, some number above it), and a value that is not plain data is
refused naming the field where it sits, however deep.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils import schema
from ansible_collections.interference.orchestrator.plugins.module_utils.schema import FieldError
from hypothesis import given, settings
from hypothesis import strategies as st

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-schema.QUANTITY_MAX, schema.QUANTITY_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
PLAIN = st.recursive(
    LEAVES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)
# Keys that join_path shows as they are, so the expected field can be written out here.
KEYS = st.text(alphabet="abcdefgh_-", min_size=1, max_size=6)
BAD_LEAVES: list[tuple[Any, str]] = [
    ({1, 2}, "must be plain data"),
    (math.nan, "is not a finite number"),
    (math.inf, "is not a finite number"),
    (schema.QUANTITY_MAX + 1, "is too large a number"),
    ({3: "x"}, "keys must be strings"),
]


@settings(max_examples=300, deadline=None)
@given(PLAIN)
def test_the_size_is_what_json_dumps_writes(value: Any) -> None:
    assert schema.json_size(value, "item", 10**9) == len(json.dumps(value))


@settings(max_examples=300, deadline=None)
@given(PLAIN, st.integers(0, 200))
def test_past_the_limit_it_says_more_than_the_limit(value: Any, limit: int) -> None:
    size = schema.json_size(value, "item", limit)
    written = len(json.dumps(value))
    if written <= limit:
        assert size == written
    else:
        assert size > limit


@settings(max_examples=200, deadline=None)
@given(st.lists(KEYS | st.integers(0, 3), max_size=6), st.sampled_from(BAD_LEAVES))
def test_bad_data_is_refused_naming_its_field(steps: list[str | int], bad: tuple[Any, str]) -> None:
    leaf, problem = bad
    # Build the value from the leaf outwards, and its field from the top down.
    value: Any = leaf
    for step in reversed(steps):
        value = [None] * step + [value] if isinstance(step, int) else {"ok": 1, step: value}
    field = "security_context"
    for step in steps:
        field = f"{field}[{step}]" if isinstance(step, int) else schema.join_path(field, step)
    if isinstance(leaf, dict):
        field = schema.join_path(field, 3)
    with pytest.raises(FieldError) as raised:
        schema.json_size(value, "security_context", 10**9)
    assert raised.value.field == field
    assert problem in raised.value.problem


def test_nesting_deeper_than_the_limit_is_refused_at_its_field() -> None:
    value: Any = "x"
    for _ in range(schema.NESTING_MAX + 1):
        value = {"a": value}
    with pytest.raises(FieldError) as raised:
        schema.json_size(value, "top", 10**9)
    assert raised.value.field == "top" + ".a" * (schema.NESTING_MAX + 1)
    assert "nested deeper than" in raised.value.problem

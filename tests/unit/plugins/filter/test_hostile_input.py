"""Random values in every field, through the filter plugins (hypothesis).

Each example starts from valid input and puts a random JSON-like value (null,
true/false, numbers huge or not finite, Unicode text with '²' and trailing
newlines, lists, mappings, some of them tagged as Ansible tags its values)
into one field of an app, of a node, or of a Node object, or in place of a
whole argument. Every filter must then return a valid result or raise
AnsibleFilterError whose message names the field, never another exception.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from ansible._internal._datatag._tags import Origin
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.nodes_from_k8s import nodes_from_k8s
from ansible_collections.interference.orchestrator.plugins.filter.place import place
from ansible_collections.interference.orchestrator.plugins.filter.placement_report import placement_report
from ansible_collections.interference.orchestrator.plugins.filter.plan_apps import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.model import APP_FIELDS, NODE_FIELDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Few examples per property: the unit tier must stay fast, and each property
# sees every field over the runs of the suite.
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ORIGIN = Origin(description="<hypothesis>")

TRICKY_TEXT = st.sampled_from(
    ["", "²", "١٢", "web\n", "3\n", " 3", "cpu", "CPU", "Extender", "plugins", "measured", "500m", "1e999999999",
     "-1", "NaN", "w1", "disk", "a/b", "x" * 300, "true", "\x00", "é"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 20)
    | st.integers()
    | st.sampled_from([10**6, 10**9, 2**63, -(2**64)])
    # More digits than int() turns into text (4,300): built, as hypothesis cannot print it as a constant.
    | st.integers(4_400, 5_000).map(lambda digits: 10**digits)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | TRICKY_TEXT
)
KEYS = st.sampled_from([*APP_FIELDS, *NODE_FIELDS, "requests", "limits", "cpu", "memory", "pods", "replica"]) | st.text(
    max_size=8
)


def tagged(value: Any) -> Any:
    """Sometimes the value as Ansible hands it to a filter (a tagged str, list, dict...)."""
    try:
        return ORIGIN.tag(value)
    except (TypeError, ValueError):  # untaggable (None, bool)
        return value


VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
).flatmap(lambda value: st.sampled_from([value, tagged(value)]))

BASE_APPS: list[dict[str, Any]] = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu", "replicas": 2,
     "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
     "node_selector": {"group": "node1"}, "command": ["sleep", "1"], "args": ["-n"], "env": {"A": "b"},
     "security_context": {"runAsNonRoot": True}},
    {"name": "mbw", "image": "pts/mbw", "profile": {"memory_bandwidth": 1}, "gpus": 0, "node": "w2",
     "profile_from": "measured"},
    {"name": "ext", "image": "pts/mbw", "type": "memory", "scheduler": "extender"},
]
BASE_NODES: list[Any] = [
    {"name": "w1", "labels": {"group": "node1"}, "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    {"name": "w2", "labels": {"group": "node2"}, "allocatable": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}},
    "w3",
]
BASE_NODE_OBJECT: dict[str, Any] = {
    "metadata": {"name": "w1", "labels": {"group": "node1"}},
    "spec": {"unschedulable": False},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "1"}},
}
# Paths into a Node object a random value may replace.
NODE_OBJECT_PATHS = [
    (), ("metadata",), ("metadata", "name"), ("metadata", "labels"), ("metadata", "labels", "group"), ("spec",),
    ("spec", "unschedulable"), ("status",), ("status", "allocatable"), ("status", "allocatable", "cpu"),
    ("status", "allocatable", "memory"), ("status", "allocatable", "pods"), ("status", "allocatable", "nvidia.com/gpu"),
]


def with_value(item: dict[str, Any], path: tuple[str, ...], value: Any) -> Any:
    """A deep copy of `item` with `value` at `path` (the whole item for an empty path)."""
    if not path:
        return value
    copy = dict(item)
    inner = copy.get(path[0])
    copy[path[0]] = with_value(inner if isinstance(inner, dict) else {}, path[1:], value)
    return copy


def expect_valid_or_named(call: Any, *names: str) -> Any:
    """Call a filter: a result, or an AnsibleFilterError naming one of `names` (or the apps it cannot place)."""
    try:
        return call()
    except AnsibleFilterError as exc:
        message = str(exc)
        assert "_Ansible" not in message and "Traceback" not in message, message
        # An app that fits no node is named with the reason per node; strict mode names the colliding apps.
        assert any(name in message for name in names) or message.startswith(("0/", "strict placement: ")), message
        return None


def all_filters(apps: Any, nodes: Any, *names: str, **options: Any) -> None:
    plan = expect_valid_or_named(lambda: plan_apps(apps, nodes, **options), *names)
    if plan is not None:
        assert [entry["name"] for entry in plan["apps"]] == [app["name"] for app in apps]
        assert all(math.isfinite(node["interference"]) for node in plan["report"]["nodes"])
    placed = expect_valid_or_named(lambda: place(apps, nodes, **options), *names)
    if placed is not None:
        assert all(len(item["nodes"]) == int(item.get("replicas", 1)) for item in placed)
    report_options = {key: value for key, value in options.items() if key != "strict"}
    report = expect_valid_or_named(lambda: placement_report(apps, nodes, **report_options), *names)
    if report is not None:
        assert report["pairs_not_listed"] >= 0


@FAST
@given(position=st.integers(0, len(BASE_APPS) - 1), key=st.sampled_from([*APP_FIELDS, "replica", "extra"]),
       value=VALUES)
def test_any_value_in_any_app_field(position: int, key: str, value: Any) -> None:
    apps = [dict(app) for app in BASE_APPS]
    apps[position][key] = value
    all_filters(apps, BASE_NODES, f"field '{key}", "field 'type'")


@FAST
@given(position=st.integers(0, len(BASE_APPS) - 1), section=st.sampled_from(["requests", "limits", "request"]),
       resource=st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "cpus", "hugepages-2Mi"]), value=VALUES)
def test_any_value_in_any_resource(position: int, section: str, resource: str, value: Any) -> None:
    apps = [dict(app) for app in BASE_APPS]
    apps[position]["resources"] = {section: {resource: value}}
    all_filters(apps, BASE_NODES, "field 'resources")


@FAST
@given(position=st.integers(0, len(BASE_APPS) - 1), value=VALUES)
def test_any_value_as_a_whole_app(position: int, value: Any) -> None:
    apps = [dict(app) for app in BASE_APPS]
    apps[position] = value
    all_filters(apps, BASE_NODES, f"apps[{position}]")


@FAST
@given(position=st.integers(0, 1), key=st.sampled_from([*NODE_FIELDS, "label"]), value=VALUES)
def test_any_value_in_any_node_field(position: int, key: str, value: Any) -> None:
    nodes = [dict(node) if isinstance(node, dict) else node for node in BASE_NODES]
    nodes[position][key] = value
    all_filters(BASE_APPS, nodes, f"nodes[{position}]", "field 'node'", "field 'previous'")


@FAST
@given(position=st.integers(0, len(BASE_NODES) - 1), value=VALUES)
def test_any_value_as_a_whole_node(position: int, value: Any) -> None:
    nodes = list(BASE_NODES)
    nodes[position] = value
    all_filters(BASE_APPS, nodes, f"nodes[{position}]", "field 'node'")


@FAST
@given(argument=st.sampled_from(["apps", "nodes", "previous", "rebalance", "strict"]), value=VALUES)
def test_any_value_as_a_whole_argument(argument: str, value: Any) -> None:
    apps: Any = value if argument == "apps" else BASE_APPS
    nodes: Any = value if argument == "nodes" else BASE_NODES
    options = {argument: value} if argument in ("previous", "rebalance", "strict") else {}
    names = ("field 'apps'", "field 'nodes'", "apps[", "nodes[", f"field '{argument}'", "field 'previous'")
    try:
        all_filters(apps, nodes, *names, **options)
    except (KeyError, TypeError, AttributeError) as exc:
        # all_filters' own checks index the input apps; a valid result from a random list is checked here.
        pytest.fail(f"unexpected {type(exc).__name__}: {exc}")


@FAST
@given(path=st.sampled_from(NODE_OBJECT_PATHS), value=VALUES, count=st.integers(1, 3))
def test_any_value_anywhere_in_a_node_object(path: tuple[str, ...], value: Any, count: int) -> None:
    resources = [with_value(BASE_NODE_OBJECT, ("metadata", "name"), f"w{i}") for i in range(count)]
    resources[-1] = with_value(resources[-1], path, value)
    nodes = expect_valid_or_named(lambda: nodes_from_k8s(resources), f"resources[{count - 1}]")
    if nodes:  # all cordoned is no error here, and an empty node list is place's to refuse
        assert all(set(node) == {"name", "labels", "allocatable"} for node in nodes)
        # What nodes_from_k8s returns, the placement takes.
        expect_valid_or_named(lambda: place(BASE_APPS[2:], nodes), "never: nodes_from_k8s checked them")


@FAST
@given(value=VALUES)
def test_any_value_as_the_node_objects(value: Any) -> None:
    expect_valid_or_named(lambda: nodes_from_k8s(value), "resources")

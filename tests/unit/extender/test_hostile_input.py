"""Hostile request bodies against a real extender server: every answer is a 200 or a 400 naming the field.

The exact examples are those issue 12 ("Hostile input") found giving 500s
with a traceback; the property tests drive random JSON, and valid
ExtenderArgs with random parts replaced by random JSON, into /filter and
/prioritize.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.contract import PROFILE_ANNOTATION
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from interference_extender.server import ExtenderHTTPServer, ServerLimits
from tests.support.extender_http import call, running_server
from tests.support.k8s_objects import extender_args, make_node, make_pod

VERBS = ("filter", "prioritize")
SPOT = client.V1Toleration(key="karpenter.sh/capacity-type", operator="Exists")


@pytest.fixture(scope="module")
def server() -> Iterator[ExtenderHTTPServer]:
    with running_server(ServerLimits()) as running:
        yield running


def body_of(pod: client.V1Pod, nodes: list[client.V1Node], cache: bool = False) -> dict[str, Any]:
    """An ExtenderArgs body as JSON data, ready to be spoiled."""
    data: dict[str, Any] = json.loads(json.dumps(extender_args(pod, nodes, node_cache_capable=cache)))
    return data


def gpu_args() -> dict[str, Any]:
    """A GPU pod that tolerates spot capacity, and three nodes, full node list."""
    nodes = [make_node("g1", gpus=1, gpu_memory="16Gi"), make_node("g2", gpus=1), make_node("plain")]
    return body_of(make_pod("trainer", gpus=1, tolerations=[SPOT], app="train"), nodes)


def answer(server: ExtenderHTTPServer, verb: str, body: dict[str, Any] | bytes) -> tuple[int, Any]:
    """(status, decoded JSON answer) of one POST; fails unless the answer is JSON."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, content_type, answered = call(server, "POST", f"/{verb}", raw)
    assert content_type == "application/json", answered[:200]
    return status, json.loads(answered)


def spoil(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    body = gpu_args()
    change(body)
    return body


def container(body: dict[str, Any]) -> dict[str, Any]:
    first: dict[str, Any] = body["Pod"]["spec"]["containers"][0]
    return first


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


GPU = '["nvidia.com/gpu"]'
WRONG_TYPES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "schedulerName a list": (
        lambda b: b["Pod"]["spec"].update(schedulerName=["interference-scheduler"]),
        "Pod.spec.schedulerName: expected a string, got a list",
    ),
    "GPU request true": (
        lambda b: container(b)["resources"]["limits"].update({"nvidia.com/gpu": True}),
        f'Pod.spec.containers[0].resources.limits{GPU}: expected a quantity (a string such as "2", or a number), '
        "got true",
    ),
    "toleration key a list": (
        lambda b: b["Pod"]["spec"].update(tolerations=[{"key": ["karpenter.sh/capacity-type"], "operator": "Exists"}]),
        "Pod.spec.tolerations[0].key: expected a string, got a list",
    ),
    "GPU request 1e400": (
        lambda b: container(b)["resources"]["limits"].update({"nvidia.com/gpu": "1e400"}),
        f'Pod.spec.containers[0].resources.limits{GPU}: "1e400" is out of range (at most 9223372036854775807)',
    ),
    "GPU request 1e300 as a number": (
        lambda b: container(b)["resources"]["limits"].update({"nvidia.com/gpu": 1e300}),
        f'Pod.spec.containers[0].resources.limits{GPU}: "1e+300" is out of range (at most 9223372036854775807)',
    ),
    "GPU request NaN": (
        lambda b: container(b)["resources"]["limits"].update({"nvidia.com/gpu": "NaN"}),
        f'Pod.spec.containers[0].resources.limits{GPU}: "NaN" is not a Kubernetes quantity',
    ),
    "init container GPU request an object": (
        lambda b: b["Pod"]["spec"].update(initContainers=[{"resources": {"requests": {"nvidia.com/gpu": {}}}}]),
        f"Pod.spec.initContainers[0].resources.requests{GPU}: expected a quantity "
        '(a string such as "2", or a number), got an object',
    ),
    "label value a number": (
        lambda b: b["Pod"]["metadata"]["labels"].update({"app.kubernetes.io/name": 3}),
        'Pod.metadata.labels["app.kubernetes.io/name"]: expected a string, got a number',
    ),
    "annotations a list": (
        lambda b: b["Pod"]["metadata"].update(annotations=["a"]),
        "Pod.metadata.annotations: expected an object, got a list",
    ),
    "node GPU capacity a list": (
        lambda b: b["Nodes"]["items"][1]["status"]["capacity"].update({"nvidia.com/gpu": ["1"]}),
        f"Nodes.items[1].status.capacity{GPU}: expected a quantity (a string such as \"2\", or a number), "
        "got a list",
    ),
    "node without a name": (
        lambda b: b["Nodes"]["items"][2]["metadata"].pop("name"),
        "Nodes.items[2].metadata.name: expected a node name",
    ),
    "node labels a string": (
        lambda b: b["Nodes"]["items"][0]["metadata"].update(labels="gpu"),
        "Nodes.items[0].metadata.labels: expected an object, got a string",
    ),
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", WRONG_TYPES)
def test_a_field_of_the_wrong_type_is_a_400_naming_it(server: ExtenderHTTPServer, case: str, verb: str) -> None:
    change, problem = WRONG_TYPES[case]
    assert answer(server, verb, spoil(change)) == (400, {"status": 400, "error": f"bad {verb} request: {problem}"})


MALFORMED: dict[str, tuple[bytes, str]] = {
    "number overflowing a double": (b'{"Pod": {"spec": {"priority": 1e400}}, "NodeNames": []}', "number is infinity"),
    "NaN": (b'{"Pod": {"spec": {"priority": NaN}}, "NodeNames": []}', "unexpected character"),
    "body nested 10,000 deep": (
        b'{"Pod": {"spec": ' + b"[" * 10_000 + b"]" * 10_000 + b'}, "NodeNames": []}', "depth limit exceeded"
    ),
    "not UTF-8": (b'{"Pod": {"metadata": {"name": "\xff"}}, "NodeNames": []}', "str is not valid UTF-8"),
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("case", MALFORMED)
def test_json_beyond_what_it_decodes_is_a_400(server: ExtenderHTTPServer, case: str, verb: str) -> None:
    raw, problem = MALFORMED[case]
    status, error = answer(server, verb, raw)
    assert status == 400
    assert error["error"].startswith(f"malformed JSON in the {verb} request: {problem}")


def test_a_node_nested_too_deep_to_echo_is_a_400_for_filter_only(server: ExtenderHTTPServer) -> None:
    # orjson decodes 1,024 levels but encodes 254: the filter answer echoes the nodes.
    body = spoil(lambda b: b["Nodes"]["items"][0]["spec"].update(deep=nested(300)))
    error = "bad filter request: a Node nested too deeply to send back (Recursion limit reached)"
    assert answer(server, "filter", body) == (400, {"status": 400, "error": error})
    assert answer(server, "prioritize", body)[0] == 200


def test_a_profile_annotation_nested_10000_deep_scores_as_no_profile(server: ExtenderHTTPServer) -> None:
    nodes = [make_node("a"), make_node("b")]
    plain = body_of(make_pod("p"), nodes)
    hostile = body_of(make_pod("p", annotations={PROFILE_ANNOTATION: "[" * 10_000 + "]" * 10_000}), nodes)
    for verb in VERBS:
        assert answer(server, verb, hostile) == answer(server, verb, plain)
        assert answer(server, verb, hostile)[0] == 200


def test_a_gpu_memory_label_of_1e400_is_no_known_memory(server: ExtenderHTTPServer) -> None:
    nodes = [make_node("huge", gpus=1, gpu_memory="1e400"), make_node("unlabelled", gpus=1),
             make_node("big", gpus=1, gpu_memory="80Gi")]
    status, scores = answer(server, "prioritize", body_of(make_pod("trainer", gpus=1), nodes))
    assert status == 200
    assert scores == [{"Host": "huge", "Score": 0}, {"Host": "unlabelled", "Score": 0}, {"Host": "big", "Score": 10}]


# -- properties

JSON_KEYS = st.sampled_from(
    ["Pod", "Nodes", "NodeNames", "items", "metadata", "spec", "status", "name", "labels", "annotations",
     "containers", "resources", "limits", "requests", "nvidia.com/gpu", "tolerations", "key", "capacity"]
) | st.text(max_size=8)
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
    | st.sampled_from(["1e400", "NaN", "Infinity", "-1", "16Gi", "1e5000", "2", "spot", "Exists", "true"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(JSON_KEYS, children, max_size=4),
    max_leaves=24,
)


def base_bodies() -> list[dict[str, Any]]:
    """Valid ExtenderArgs that reach every field the decisions read, in both modes."""
    nodes = [
        make_node("g1", gpus=2, gpu_memory="16384", zone="z1", labels={"karpenter.sh/capacity-type": "spot"}),
        make_node("g2", gpus=1, gpu_memory="80Gi", zone="z2"),
        make_node("plain", zone="z1"),
    ]
    pods = [
        make_pod("trainer", gpus=1, tolerations=[SPOT], app="train", annotations={PROFILE_ANNOTATION: '{"cpu":0.5}'}),
        make_pod("batch", pod_type="memory", gpus=1, gpu_in="requests", app="batch"),
    ]
    return [body_of(pod, nodes, cache) for pod in pods for cache in (False, True)]


BASES = base_bodies()


def check_answers(server: ExtenderHTTPServer, raw: bytes) -> None:
    for verb in VERBS:
        status, decoded = answer(server, verb, raw)
        assert status in (200, 400), decoded
        if status == 400:
            assert decoded["error"].startswith((f"bad {verb} request: ", f"malformed JSON in the {verb} request: "))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON_VALUES)
def test_random_json_gets_200_or_400(server: ExtenderHTTPServer, value: Any) -> None:
    check_answers(server, json.dumps(value).encode())


# Parts of a Node the decisions never read: replaced whole, never walked into, so
# the random paths land on the fields that are read more often.
UNREAD = frozenset({"images", "conditions", "addresses", "nodeInfo", "daemonEndpoints"})


def paths_in(value: Any, prefix: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The path of `value` and of everything inside it (keys and list indices), UNREAD parts not entered."""
    found = [prefix]
    if prefix and prefix[-1] in UNREAD:
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_in(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths_in(item, (*prefix, index))
    return found


def replaced(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`body` with the part at `path` replaced by `value` (in place below the top)."""
    if not path:
        return value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_extender_args_with_random_parts_replaced_get_200_or_400(
    server: ExtenderHTTPServer, data: st.DataObject
) -> None:
    body: Any = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    # Uniform choices of where to replace (hypothesis's own draws favour the first
    # candidates, which would be the top of the body every time).
    rng = data.draw(st.randoms(use_true_random=False), label="where")
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="replacements")):
        # The Pod, the nodes or the names first, so each gets its share of the paths.
        sections = [key for key in ("Pod", "Nodes", "NodeNames") if isinstance(body, dict) and body.get(key)]
        if not sections:
            break
        section = rng.choice(sections)
        path = rng.choice(paths_in(body[section], (section,)))
        body = replaced(body, path, data.draw(JSON_VALUES, label="replacement"))
    check_answers(server, json.dumps(body).encode())

"""The input schema (model.py, schema.py): the exact message of each hostile input issue 12 found, and the bounds.

Each case is a value that used to pass unnoticed, or to fail with a Python
message (`invalid literal for int()`, `dictionary update sequence element`),
and the one sentence it now fails with: the list, the index and name of the
item, the field, and what is wrong, in the words of the input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible._internal._datatag._tags import Origin
from ansible_collections.interference.orchestrator.plugins.module_utils import model
from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import (
    AppInputError,
    ClusterObjectError,
    InputError,
    NodeInputError,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.model import (
    MAX_APPS,
    MAX_NODES,
    MAX_PODS,
    MAX_REPLICAS,
    nodes_from_k8s,
    parse_apps,
    parse_nodes,
)
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place

NAME_RULE = (
    "is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, "
    "at most 63 characters)"
)
LABEL_KEY_RULE = (
    "is not a label key (an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or "
    "'.', starting and ending with a letter or digit)"
)
LABEL_VALUE_RULE = (
    "is not a label value (empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a "
    "letter or digit)"
)
APP_FIELDS = (
    "valid fields: name, image, type, profile, profile_from, replicas, resources, gpus, node_selector, node, "
    "command, args, env, scheduler, security_context, tolerations, cpu_demand"
)


def app(name: str = "web", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "pts/c-ray", "type": "cpu", **fields}


def app_error(apps: list[Any]) -> str:
    with pytest.raises(AppInputError) as failure:
        parse_apps(apps)
    return str(failure.value)


APP_CASES: list[tuple[str, list[Any], str]] = [
    # Class 2: invalid objects that passed validation.
    ("name ending in a newline", [app("web\n")], f"apps[0] ('web\\n'): field 'name': 'web\\n' {NAME_RULE}"),
    (
        "newline name next to its twin (the duplicate check saw two names)",
        [app("web"), app("web\n")],
        f"apps[1] ('web\\n'): field 'name': 'web\\n' {NAME_RULE}",
    ),
    (
        "cpu: true after another app used cpu: 1 (1 == True in the quantity cache)",
        [app("a", resources={"requests": {"cpu": 1}}), app("b", resources={"requests": {"cpu": True}})],
        "apps[1] (b): field 'resources.requests.cpu': not a Kubernetes quantity true: give text such as 500m, 2, "
        "512Mi or 1G, or a number, not true/false",
    ),
    ("command as a string", [app(command="sleep 1")], "apps[0] (web): field 'command': must be a list of strings, "
     "got 'sleep 1'"),
    ("args as a string", [app(args="--fast")], "apps[0] (web): field 'args': must be a list of strings, got '--fast'"),
    ("args holding a number", [app(args=["-n", 4])], "apps[0] (web): field 'args[1]': must be a string, got 4"),
    (
        "node_selector key with a space",
        [app(node_selector={"disk type": "ssd"})],
        f"apps[0] (web): field 'node_selector.disk type': 'disk type' {LABEL_KEY_RULE}",
    ),
    (
        "node_selector value that is a mapping (was stringified)",
        [app(node_selector={"disk": {"type": "ssd"}})],
        f"apps[0] (web): field 'node_selector.disk': a mapping {LABEL_VALUE_RULE}",
    ),
    (
        "node_selector value true (was 'True', matching no node)",
        [app(node_selector={"gpu": True})],
        f"apps[0] (web): field 'node_selector.gpu': true {LABEL_VALUE_RULE} (quote it to mean the text)",
    ),
    (
        "env built by YAML anchors (a 7 MB annotation)",
        [app(env={f"VAR_{i}": "x" * 100 for i in range(70_000)})],
        "apps[0] (web): field 'env': the app takes more than 32 KiB as JSON, the most one app may take (it is "
        "stored in an annotation of its Deployment; env alone takes more than 32,768 bytes)",
    ),
    (
        "args of a thousand aliases of one long string",
        [app(args=["y" * 100_000] * 1000)],
        "apps[0] (web): field 'args': the app takes more than 32 KiB as JSON, the most one app may take (it is "
        "stored in an annotation of its Deployment; args alone takes more than 32,768 bytes)",
    ),
    (
        "env name that Kubernetes refuses",
        [app(env={"1ST": "x"})],
        "apps[0] (web): field 'env.1ST': '1ST' is not an environment variable name (letters, digits, '-', '.', "
        "'_', not starting with a digit)",
    ),
    (
        "env value left empty in YAML",
        [app(env={"HOME": None})],
        "apps[0] (web): field 'env.HOME': must be a string, a number or true/false, got null "
        "(write '' for an empty value)",
    ),
    (
        "typo: replica",
        [app(replica=2)],
        f"apps[0] (web): field 'replica': unknown field; did you mean 'replicas'? ({APP_FIELDS})",
    ),
    (
        "typo: node_selecter",
        [app(node_selecter={"disk": "ssd"})],
        f"apps[0] (web): field 'node_selecter': unknown field; did you mean 'node_selector'? ({APP_FIELDS})",
    ),
    ("typo of name itself", [{"nmae": "web", "image": "x", "type": "cpu"}],
     f"apps[0]: field 'nmae': unknown field; did you mean 'name'? ({APP_FIELDS})"),
    (
        "scheduler that is not one",
        [app(scheduler="kube-scheduler")],
        "apps[0] (web): field 'scheduler': unknown scheduler 'kube-scheduler': expected one of extender, plugins",
    ),
    (
        "profile_from that is not one",
        [app(profile_from="guess")],
        "apps[0] (web): field 'profile_from': unknown profile_from 'guess': expected one of measured, observed",
    ),
    (
        "resources with a typo",
        [app(resources={"request": {"cpu": "1"}})],
        "apps[0] (web): field 'resources.request': unknown field; did you mean 'requests'? "
        "(valid fields: requests, limits)",
    ),
    (
        "resource name with a typo",
        [app(resources={"requests": {"cpus": "1"}})],
        "apps[0] (web): field 'resources.requests.cpus': unknown field; did you mean 'cpu'? (valid fields: cpu, "
        "memory, ephemeral-storage, storage, pods, hugepages-<size>, nvidia.com/gpu)",
    ),
    (
        "limit that is no quantity",
        [app(resources={"limits": {"memory": "lots"}})],
        "apps[0] (web): field 'resources.limits.memory': not a Kubernetes quantity 'lots': expected a number and "
        "an optional suffix, such as 500m, 2, 512Mi or 1G",
    ),
    (
        "quantity with an exponent too large to expand",
        [app(resources={"requests": {"memory": "1e999999999"}})],
        "apps[0] (web): field 'resources.requests.memory': not a Kubernetes quantity '1e999999999': more than "
        "Kubernetes can hold (2^63 - 1 thousandths of a unit)",
    ),
    (
        "security_context that is not a mapping",
        [app(security_context=["privileged"])],
        "apps[0] (web): field 'security_context': must be a mapping of container securityContext field to value "
        "(runAsNonRoot: true), got a list",
    ),
    ("pin to a name no node can have", [app(node="Worker 1")],
     "apps[0] (web): field 'node': 'Worker 1' is not a node name (a DNS-1123 subdomain: lower-case letters, "
     "digits, '-' and '.', at most 253 characters)"),
    # Class 3: raw Python messages and internal names.
    (
        "replicas '²' (str.isdigit says it is a digit)",
        [app(replicas="²")],
        f"apps[0] (web): field 'replicas': must be a whole number from 1 to {MAX_REPLICAS:,}, got '²'",
    ),
    (
        "replicas of 10,000 digits (int() refuses more than 4,300)",
        [app(replicas="9" * 10_000)],
        f"apps[0] (web): field 'replicas': must be a whole number from 1 to {MAX_REPLICAS:,}, "
        f"got '{'9' * 59}...",
    ),
    ("replicas true", [app(replicas=True)],
     f"apps[0] (web): field 'replicas': must be a whole number from 1 to {MAX_REPLICAS:,}, got true"),
    (
        "an app that is a list, tagged by Ansible",
        [Origin(description="test").tag(["web"])],
        "apps[0]: field '(item)': must be a mapping, got a list",
    ),
    (
        "a type tagged by Ansible",
        [app(type=Origin(description="test").tag(["cpu"]))],
        "apps[0] (web): field 'type': unknown type a list: expected one of cpu, memory",
    ),
    # Bounds: a clear error instead of a hang.
    (
        "replicas 10^6",
        [app(replicas=10**6)],
        f"apps[0] (web): field 'replicas': must be a whole number from 1 to {MAX_REPLICAS:,}, got 1000000",
    ),
    (
        "replicas 10^9",
        [app(replicas=10**9)],
        f"apps[0] (web): field 'replicas': must be a whole number from 1 to {MAX_REPLICAS:,}, got 1000000000",
    ),
    (
        "more pods than one run places",
        [app(f"a{i}", replicas=MAX_REPLICAS) for i in range(MAX_PODS // MAX_REPLICAS + 1)],
        f"apps[{MAX_PODS // MAX_REPLICAS}] (a{MAX_PODS // MAX_REPLICAS}): field 'replicas': the apps up to this "
        f"one ask for {MAX_PODS + MAX_REPLICAS:,} pods, more than the {MAX_PODS:,} one run places",
    ),
]


@pytest.mark.parametrize(("apps", "message"), [case[1:] for case in APP_CASES], ids=[case[0] for case in APP_CASES])
def test_hostile_app_fails_with_this_exact_message(apps: list[Any], message: str) -> None:
    assert app_error(apps) == message


def test_too_many_apps() -> None:
    message = app_error([app(f"a{i}") for i in range(MAX_APPS + 1)])
    assert message == f"apps: field 'apps': {MAX_APPS + 1:,} apps, more than the {MAX_APPS:,} one run takes"


def test_apps_that_is_a_string() -> None:
    assert app_error("web") == "apps: field 'apps': must be a list of apps, got 'web'"  # type: ignore[arg-type]


def test_enumerations_are_taken_in_any_case() -> None:
    apps = parse_apps([
        app("a", type="CPU", scheduler="Extender", profile_from="MEASURED"),
        {"name": "b", "image": "x", "profile": {"LLC": 0.5}},
    ])
    assert (apps[0].type_label, apps[0].scheduler) == ("cpu", "extender")
    assert apps[1].profile == (0.0, 0.0, 0.5, 0.0, 0.0)


def test_scheduler_in_any_case_leaves_the_app_to_that_scheduler() -> None:
    """`scheduler: Extender` used to pin the app (the comparison was case-sensitive)."""
    plan = plan_apps([app(scheduler="Extender"), app("db", scheduler="PLUGINS")], ["w1"])
    assert [(entry["extender"], entry["scheduler"], entry["nodes"]) for entry in plan["apps"]] == [
        (True, "extender", []),
        (True, "plugins", []),
    ]
    assert [entry["app"]["scheduler"] for entry in plan["apps"]] == ["extender", "plugins"]


def test_whole_numbers_given_as_digits_or_whole_floats_are_taken() -> None:
    [parsed] = parse_apps([app(replicas="3", gpus=2.0, env={"N": 4, "ON": True, "RATIO": 0.5})])
    assert (parsed.replicas, parsed.gpus) == (3, 2)


def test_labels_quantities_and_security_context_that_kubernetes_takes_are_taken() -> None:
    [parsed] = parse_apps([
        app(
            node_selector={"topology.kubernetes.io/zone": "eu-1a", "tier": "", "rack": 7},
            resources={"requests": {"cpu": "+1.5", "memory": "1e3", "hugepages-2Mi": "4Mi", "example.com/dev": 1},
                       "limits": {"ephemeral-storage": "1Gi"}},
            security_context={"runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        )
    ])
    assert parsed.node_selector == (("rack", "7"), ("tier", ""), ("topology.kubernetes.io/zone", "eu-1a"))
    assert (parsed.cpu_millicores, parsed.memory_bytes) == (1500, 1000)


NODE_CASES: list[tuple[str, list[Any], str]] = [
    ("node name with a newline", ["w1\n"], "nodes[0] ('w1\\n'): field 'name': 'w1\\n' is not a node name (a "
     "DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253 characters)"),
    (
        "typo in a node mapping",
        [{"name": "w1", "label": {"disk": "ssd"}}],
        "nodes[0] (w1): field 'label': unknown field; did you mean 'labels'? (valid fields: name, labels, "
        "allocatable, taints, ready, requested)",
    ),
    (
        "label value that is a list",
        [{"name": "w1", "labels": {"disk": ["ssd"]}}],
        f"nodes[0] (w1): field 'labels.disk': a list {LABEL_VALUE_RULE}",
    ),
    (
        "allocatable cpu true",
        [{"name": "w1", "allocatable": {"cpu": True}}],
        "nodes[0] (w1): field 'allocatable.cpu': not a Kubernetes quantity true: give text such as 500m, 2, 512Mi "
        "or 1G, or a number, not true/false",
    ),
    ("a node that is a number", [7], "nodes[0]: field '(item)': must be a node name or a mapping, got 7"),
]


@pytest.mark.parametrize(("nodes", "message"), [case[1:] for case in NODE_CASES], ids=[case[0] for case in NODE_CASES])
def test_hostile_node_fails_with_this_exact_message(nodes: list[Any], message: str) -> None:
    with pytest.raises(NodeInputError) as failure:
        parse_nodes(nodes)
    assert str(failure.value) == message


def test_too_many_nodes() -> None:
    with pytest.raises(NodeInputError) as failure:
        parse_nodes([f"w{i}" for i in range(MAX_NODES + 1)])
    expected = f"nodes: field 'nodes': {MAX_NODES + 1:,} nodes, more than the {MAX_NODES:,} one run takes"
    assert str(failure.value) == expected


def node_object(name: str = "w1", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"group": "node1"}}, "status": {"allocatable": {"cpu": "2"}}, **fields}


K8S_CASES: list[tuple[str, list[Any], str]] = [
    (
        "five Node objects whose labels are lists (was `dictionary update sequence element #0 has length 1`)",
        [{"metadata": {"name": f"w{i}", "labels": ["group=node1"]}} for i in range(5)],
        "resources[0] (w0): field 'metadata.labels': must be a mapping of label to value, got a list",
    ),
    ("an object with no metadata", [{"kind": "Pod"}],
     "resources[0]: field 'metadata': missing: not a Kubernetes Node object"),
    ("a string", ["w1"], "resources[0]: field '(item)': must be a Kubernetes Node object (a mapping), got 'w1'"),
    (
        "allocatable that is no quantity",
        [node_object(status={"allocatable": {"memory": "16 GB"}})],
        "resources[0] (w1): field 'status.allocatable.memory': not a Kubernetes quantity '16 GB': expected a "
        "number and an optional suffix, such as 500m, 2, 512Mi or 1G",
    ),
    ("spec that is a string", [node_object(spec="unschedulable")],
     "resources[0] (w1): field 'spec': must be a mapping of Node spec fields, got 'unschedulable'"),
    ("the same node twice", [node_object(), node_object()],
     "resources[1] (w1): field 'metadata.name': same name as resources[0]"),
]


@pytest.mark.parametrize(
    ("resources", "message"), [case[1:] for case in K8S_CASES], ids=[case[0] for case in K8S_CASES]
)
def test_malformed_node_object_fails_with_this_exact_message(resources: list[Any], message: str) -> None:
    with pytest.raises(ClusterObjectError) as failure:
        nodes_from_k8s(resources)
    assert str(failure.value) == message


def test_cordoned_nodes_are_left_out_and_the_rest_kept() -> None:
    nodes = nodes_from_k8s([node_object("w1", spec={"unschedulable": True}), node_object("w2")])
    assert nodes == [{"name": "w2", "labels": {"group": "node1"}, "allocatable": {"cpu": "2"}}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rebalance": "maybe"}, "input: field 'rebalance': must be true or false, got 'maybe'"),
        ({"strict": [True]}, "input: field 'strict': must be true or false, got a list"),
        ({"search_effort": float("nan")}, "input: field 'search_effort': must be a number from 0 to 100, got nan"),
    ],
)
def test_options_that_are_not_what_they_say(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as failure:
        place([app()], ["w1"], **options)
    assert str(failure.value) == message


def test_rebalance_given_as_the_word_false_is_false() -> None:
    """`-e apps_rebalance=false` arrives as the string 'false', which Python takes as true."""
    plan = place([app()], ["w1", "w2"], previous={"web": ["w2"]}, rebalance="false")
    assert plan.node_names(0) == ["w2"]


def test_the_apps_role_argument_spec_declares_exactly_the_fields_the_engine_reads() -> None:
    """Ansible validates `apps` against the role's suboptions before the engine sees it: a field the engine reads
    but the spec lacks is refused as unsupported (tolerations once was), one the spec has but the engine lacks
    would pass unread."""
    spec = yaml.safe_load((Path(__file__).parents[4] / "roles" / "apps" / "meta" / "argument_specs.yml").read_text())
    assert sorted(spec["argument_specs"]["main"]["options"]["apps"]["options"]) == sorted(model.APP_FIELDS)

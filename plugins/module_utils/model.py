"""Apps and nodes as the placement engine sees them, validated from plain data.

Input comes from `group_vars` (apps) and from `kubernetes.core.k8s_info` or a
plain list of names (nodes). Every problem is reported as an AppInputError or
NodeInputError naming the item, its index and the field, never as a traceback.

Units: CPU in millicores, memory in bytes, pods and GPUs in counts.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .contract import CUSTOM_TYPE
from .errors import AppInputError, NodeInputError
from .interference import PRESSURE_DIMENSIONS, TYPE_PROFILES, Profile, profile_for_type, profile_from_mapping

# RFC 1123 label, as Kubernetes checks names of Deployments and labels.
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_MAX = 63
GPU_RESOURCE = "nvidia.com/gpu"


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity (`500m`, `2`, `512Mi`, `1G`) into a Decimal.

    Delegates to the kubernetes client's parser, imported lazily so that code
    paths that never see a quantity do not pay for importing the client.
    """
    from kubernetes.utils.quantity import parse_quantity as _parse

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"expected a Kubernetes quantity, got {type(value).__name__}")
    parsed = _parse(value)
    if parsed < 0:
        raise ValueError("must not be negative")
    return Decimal(parsed)


@functools.lru_cache(maxsize=1024)
def _quantity(value: object, millis: bool) -> int:
    """A quantity in millis (cpu) or whole units (bytes, counts), rounded up; cached, as few values recur."""
    parsed = parse_quantity(value)
    return math.ceil(parsed * 1000) if millis else math.ceil(parsed)


@dataclass(frozen=True)
class App:
    """One app to place. `profile` is its pressure vector (see interference.py)."""

    index: int
    name: str
    profile: Profile
    replicas: int
    cpu_millicores: int
    memory_bytes: int
    gpus: int
    node_selector: tuple[tuple[str, str], ...]
    pinned_node: str | None
    type_label: str


@dataclass
class Node:
    """One node. None for cpu/memory/pods means the node did not say (unbounded)."""

    index: int
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    cpu_millicores: int | None = None
    memory_bytes: int | None = None
    pods: int | None = None
    gpus: int = 0


def _as_int(value: object, minimum: int) -> int | None:
    """Return value as an int >= minimum, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        return None
    return number if number >= minimum else None


def _app_profile(index: int, name: str, item: Mapping[str, Any]) -> tuple[Profile, str]:
    raw_type = item.get("type")
    raw_profile = item.get("profile")
    if raw_type is None and raw_profile is None:
        raise AppInputError(index, name, "type", "missing: give `type` (cpu or memory) or a `profile`")
    type_label = ""
    if raw_type is not None:
        if not isinstance(raw_type, str) or raw_type.lower() not in TYPE_PROFILES:
            raise AppInputError(
                index, name, "type", f"unknown type {raw_type!r}: expected one of {', '.join(TYPE_PROFILES)}"
            )
        type_label = raw_type.lower()
    if raw_profile is None:
        return profile_for_type(type_label), type_label
    if not isinstance(raw_profile, Mapping) or not raw_profile:
        raise AppInputError(index, name, "profile", "must be a non-empty mapping of resource to pressure in [0, 1]")
    for key, value in raw_profile.items():
        if key not in PRESSURE_DIMENSIONS:
            raise AppInputError(
                index, name, f"profile.{key}", f"unknown resource: expected one of {', '.join(PRESSURE_DIMENSIONS)}"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise AppInputError(index, name, f"profile.{key}", f"must be a number from 0 to 1, got {value!r}")
    profile = profile_from_mapping(dict(raw_profile))
    if not type_label:
        type_label = CUSTOM_TYPE
    return profile, type_label


def _requests(index: int, name: str, item: Mapping[str, Any]) -> tuple[int, int]:
    resources = item.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise AppInputError(index, name, "resources", "must be a mapping with `requests`")
    requests = resources.get("requests") or {}
    if not isinstance(requests, Mapping):
        raise AppInputError(index, name, "resources.requests", "must be a mapping of cpu and memory")
    amounts = []
    for resource, millis in (("cpu", True), ("memory", False)):
        value = requests.get(resource)
        if value is None:
            amounts.append(0)
            continue
        try:
            amounts.append(_quantity(value, millis))
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise AppInputError(
                index, name, f"resources.requests.{resource}", f"not a Kubernetes quantity {value!r}: {exc}"
            ) from None
    return amounts[0], amounts[1]


def parse_app(index: int, item: object) -> App:
    """Validate one app item and return it as an App."""
    if not isinstance(item, Mapping):
        raise AppInputError(index, None, "(item)", f"must be a mapping, got {type(item).__name__}")
    name = item.get("name")
    if name is None or name == "":
        raise AppInputError(index, None, "name", "missing")
    if not isinstance(name, str) or len(name) > DNS1123_MAX or not DNS1123_LABEL.match(name):
        raise AppInputError(
            index,
            name if isinstance(name, str) else None,
            "name",
            f"{name!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit, at most {DNS1123_MAX} characters)",
        )
    image = item.get("image")
    if not isinstance(image, str) or not image.strip():
        problem = "missing" if image is None else f"must be a non-empty string, got {image!r}"
        raise AppInputError(index, name, "image", problem)
    profile, type_label = _app_profile(index, name, item)
    replicas = _as_int(item.get("replicas", 1), 1)
    if replicas is None:
        raise AppInputError(index, name, "replicas", f"must be an integer >= 1, got {item.get('replicas')!r}")
    gpus = _as_int(item.get("gpus", 0), 0)
    if gpus is None:
        raise AppInputError(index, name, "gpus", f"must be an integer >= 0, got {item.get('gpus')!r}")
    cpu, memory = _requests(index, name, item)
    selector = item.get("node_selector") or {}
    if not isinstance(selector, Mapping) or not all(isinstance(k, str) for k in selector):
        raise AppInputError(index, name, "node_selector", "must be a mapping of label to value")
    node = item.get("node")
    if node is not None and (not isinstance(node, str) or not node):
        raise AppInputError(index, name, "node", f"must be a node name, got {node!r}")
    return App(
        index=index,
        name=name,
        profile=profile,
        replicas=replicas,
        cpu_millicores=cpu,
        memory_bytes=memory,
        gpus=gpus,
        node_selector=tuple(sorted((k, str(v)) for k, v in selector.items())),
        pinned_node=node,
        type_label=type_label,
    )


def parse_apps(items: object) -> list[App]:
    """Validate the apps list: each item, then names unique across the list."""
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise AppInputError(None, None, "apps", f"must be a list of apps, got {type(items).__name__}")
    apps = [parse_app(index, item) for index, item in enumerate(items)]
    first_seen: dict[str, int] = {}
    for app in apps:
        if app.name in first_seen:
            problem = f"duplicate: apps[{first_seen[app.name]}] has the same name"
            raise AppInputError(app.index, app.name, "name", problem)
        first_seen[app.name] = app.index
    return apps


def _node_quantity(index: int, name: str, allocatable: Mapping[str, Any], key: str, millis: bool) -> int | None:
    value = allocatable.get(key)
    if value is None:
        return None
    try:
        return _quantity(value, millis)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise NodeInputError(index, name, f"allocatable.{key}", f"not a Kubernetes quantity {value!r}: {exc}") from None


def parse_node(index: int, item: object) -> Node:
    """Validate one node: a plain name, or {name, labels, allocatable}."""
    if isinstance(item, str):
        if not item:
            raise NodeInputError(index, None, "name", "empty node name")
        return Node(index=index, name=item)
    if not isinstance(item, Mapping):
        raise NodeInputError(index, None, "(item)", f"must be a node name or a mapping, got {type(item).__name__}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise NodeInputError(index, None, "name", "missing")
    labels = item.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise NodeInputError(index, name, "labels", "must be a mapping of label to value")
    allocatable = item.get("allocatable") or {}
    if not isinstance(allocatable, Mapping):
        raise NodeInputError(index, name, "allocatable", "must be a mapping of resource to quantity")
    pods = _node_quantity(index, name, allocatable, "pods", False)
    return Node(
        index=index,
        name=name,
        labels={str(k): str(v) for k, v in labels.items()},
        cpu_millicores=_node_quantity(index, name, allocatable, "cpu", True),
        memory_bytes=_node_quantity(index, name, allocatable, "memory", False),
        pods=pods,
        gpus=_node_quantity(index, name, allocatable, GPU_RESOURCE, False) or 0,
    )


def parse_nodes(items: object) -> list[Node]:
    """Validate the node list: not empty, each node valid, names unique."""
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise NodeInputError(None, None, "nodes", f"must be a list of nodes, got {type(items).__name__}")
    if not items:
        raise NodeInputError(None, None, "nodes", "the node list is empty: there is nowhere to place apps")
    nodes = [parse_node(index, item) for index, item in enumerate(items)]
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise NodeInputError(node.index, node.name, "name", "duplicate node name")
        seen.add(node.name)
    return nodes


def nodes_from_k8s(resources: object) -> list[dict[str, Any]]:
    """Turn `kubernetes.core.k8s_info` Node resources into the engine's node dicts.

    Nodes marked unschedulable (cordoned) are left out, as kube-scheduler does.
    """
    if not isinstance(resources, Sequence) or isinstance(resources, (str, bytes)):
        raise NodeInputError(None, None, "resources", "expected the `resources` list of a k8s_info result on Nodes")
    result = []
    for index, resource in enumerate(resources):
        if not isinstance(resource, Mapping) or not isinstance(resource.get("metadata"), Mapping):
            raise NodeInputError(index, None, "metadata", "not a Kubernetes Node object")
        if (resource.get("spec") or {}).get("unschedulable"):
            continue
        metadata = resource["metadata"]
        allocatable = (resource.get("status") or {}).get("allocatable") or {}
        result.append(
            {
                "name": metadata.get("name"),
                "labels": dict(metadata.get("labels") or {}),
                "allocatable": {
                    key: allocatable[key] for key in ("cpu", "memory", "pods", GPU_RESOURCE) if key in allocatable
                },
            }
        )
    return result


_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def natural_key(name: str) -> tuple[str, int, str]:
    """Sort key of a node name in kind's order: `w-worker` is 1, then `w-worker2` ... `w-worker10`.

    The name without its trailing number, then that number (1 when there is
    none), then the name itself to break ties.
    """
    match = _TRAILING_NUMBER.match(name)
    if match is None:
        return name, 1, name
    return match.group(1), int(match.group(2)), name


def natural_sort(names: object) -> list[str]:
    """Node names in natural order (see natural_key)."""
    if not isinstance(names, Sequence) or isinstance(names, (str, bytes)) or not all(isinstance(n, str) for n in names):
        raise NodeInputError(None, None, "names", f"must be a list of node names, got {names!r}")
    return sorted(names, key=natural_key)

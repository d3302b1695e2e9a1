"""Apps and nodes as the placement engine sees them, validated from plain data.

Input comes from `group_vars` (apps) and from `kubernetes.core.k8s_info` or a
plain list of names (nodes). The schema is strict: an unknown key is an error
suggesting the closest field, enumerations are taken in any case, names and
labels follow Kubernetes' syntax, numbers are numbers (true is not 1), and
the lists and the pods are bounded (MAX_APPS, MAX_NODES, MAX_REPLICAS,
MAX_PODS). Every problem is reported as an AppInputError or NodeInputError
naming the item, its index and the field, never as a traceback; the field
rules themselves are in schema.py.

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

from . import schema
from .cluster_state import requested_by_node
from .contract import CUSTOM_TYPE
from .errors import AppInputError, ClusterObjectError, InputError, NodeInputError
from .interference import PRESSURE_DIMENSIONS, TYPE_PROFILES, Profile, profile_for_type, profile_from_mapping
from .schema import FieldError

GPU_RESOURCE = "nvidia.com/gpu"

# The fields of an app and of a node given as a mapping; anything else is a typo.
APP_FIELDS: tuple[str, ...] = (
    "name", "image", "type", "profile", "profile_from", "replicas", "resources", "gpus", "node_selector", "node",
    "command", "args", "env", "scheduler", "security_context", "tolerations", "cpu_demand",
)
# `taints`, `ready` and `requested` (what pods the plan does not manage already request there, subtracted
# from `allocatable`) are what nodes_from_k8s reads from the cluster; a plain node has none of them.
NODE_FIELDS: tuple[str, ...] = ("name", "labels", "allocatable", "taints", "ready", "requested")
# `scheduler`: leave the app to the scheduler extender or to the scheduler-framework plugins build.
SCHEDULERS: tuple[str, ...] = ("extender", "plugins")
# `profile_from`: where a profile comes from instead of the declared one (applied by the
# measured_profiles filter): pairwise co-location runs (playbooks/profile.yml) or the
# interference probe's view of each app alone (playbooks/observe.yml).
PROFILE_SOURCES: tuple[str, ...] = ("measured", "observed")
RESOURCE_SECTIONS: tuple[str, ...] = ("requests", "limits")
# Resource names Kubernetes knows without a prefix (besides hugepages-<size>);
# any other resource is an extended one and carries a domain prefix (nvidia.com/gpu).
UNPREFIXED_RESOURCES: tuple[str, ...] = ("cpu", "memory", "ephemeral-storage", "storage", "pods")

# Upper bounds on the input. Each keeps a run's work bounded (the engine is
# about linear in the pods: 10,000 apps on 1,000 nodes take a few seconds) and
# turns a typo such as `replicas: 1000000` into a clear error instead of a run
# that never ends. docs/apps.md lists them.
MAX_APPS = 10_000
# Kubernetes' own tested limit: clusters of up to 5,000 nodes.
MAX_NODES = 5_000
MAX_REPLICAS = 10_000
# Pods over all apps of one run.
MAX_PODS = 50_000
MAX_GPUS = 1_000
IMAGE_MAX = 4_096
# An app item as JSON: the apps role stores it in an annotation of its
# Deployment, and Kubernetes allows 256 KiB for all annotations of an object
# (cluster_state.MANAGED_ANNOTATIONS_MAX_BYTES says why only part of that).
APP_ITEM_MAX_BYTES = 32 * 1024


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity (`500m`, `2`, `512Mi`, `1G`) into a Decimal, at least 0, of any size.

    Raises TypeError for a value that is neither text nor a number and
    ValueError for text that is no quantity or a negative one (see
    schema.quantity). The input checks here also refuse quantities beyond
    what Kubernetes holds (schema.bounded_quantity); other callers check the
    size before they round.
    """
    return schema.quantity(value)


@functools.lru_cache(maxsize=1024)
def _cached_quantity(value: str | int | float, millis: bool) -> int:
    parsed = schema.bounded_quantity(value)
    return math.ceil(parsed * 1000) if millis else math.ceil(parsed)


def quantity_units(value: object, millis: bool) -> int:
    """A quantity in millis (cpu) or whole units (bytes, counts), rounded up.

    Cached, as few values recur; the key is the plain value, so an equal
    value of another type (true == 1) can never get another's answer.
    """
    plain: str | int | float
    if isinstance(value, str):
        plain = str(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        plain = int(value)
    elif isinstance(value, float):
        plain = float(value)
    else:
        raise TypeError(f"give text such as {schema.QUANTITY_EXAMPLES}, or a number, not {schema.kind_of(value)}")
    return _cached_quantity(plain, millis)


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
    # `extender` or `plugins` when a scheduler places the app at pod creation, else None.
    scheduler: str | None = None
    # (key, operator, value, effect) per toleration (schema.toleration).
    tolerations: tuple[schema.Toleration, ...] = ()
    # CPU the app would use if it had it (millicores, `cpu_demand`): what time-sharing counts (timesharing.py).
    cpu_demand_millicores: int = 0


@dataclass
class Node:
    """One node. None for cpu/memory/pods means the node did not say (unbounded).

    cpu, memory, pods and GPUs are what is free for the plan: allocatable
    less what other pods already request there (`requested`, zero for a plain
    node). `taints` are (key, value, effect); `ready` is false for a node
    whose Ready condition is not True.
    """

    index: int
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    cpu_millicores: int | None = None
    memory_bytes: int | None = None
    pods: int | None = None
    gpus: int = 0
    taints: tuple[schema.Taint, ...] = ()
    ready: bool = True


def _profile(item: Mapping[Any, Any]) -> tuple[Profile, str]:
    raw_type = item.get("type")
    raw_profile = item.get("profile")
    if raw_type is None and raw_profile is None:
        raise FieldError("type", "missing: give `type` (cpu or memory) or a `profile`")
    type_label = "" if raw_type is None else schema.choice(raw_type, "type", TYPE_PROFILES)
    if item.get("profile_from") is not None:
        schema.choice(item["profile_from"], "profile_from", PROFILE_SOURCES)
    if raw_profile is None:
        return profile_for_type(type_label), type_label
    if not isinstance(raw_profile, Mapping) or not raw_profile:
        raise FieldError("profile", "must be a non-empty mapping of resource to pressure in [0, 1]")
    pressures: dict[str, float] = {}
    for key, value in raw_profile.items():
        path = schema.join_path("profile", key)
        if not isinstance(key, str) or key.lower() not in PRESSURE_DIMENSIONS:
            raise FieldError(path, f"unknown resource: expected one of {', '.join(PRESSURE_DIMENSIONS)}")
        if key.lower() in pressures:
            raise FieldError(path, f"given twice (as {key.lower()!r} in another case)")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise FieldError(path, f"must be a number from 0 to 1, {schema.got(value)}")
        pressures[key.lower()] = float(value)
    return profile_from_mapping(pressures), type_label or CUSTOM_TYPE


def _resource_name(key: object, field: str) -> str:
    """A resource name: cpu, memory, ephemeral-storage, storage, hugepages-<size>, or a prefixed extended resource."""
    if isinstance(key, str):
        if key in UNPREFIXED_RESOURCES:
            return key
        if "/" in key:
            return schema.label_key(key, field)
        if key.startswith("hugepages-") and schema.QUANTITY.fullmatch(key.removeprefix("hugepages-")):
            return key
    raise FieldError(field, schema.unknown_key_problem(key, (*UNPREFIXED_RESOURCES, "hugepages-<size>", GPU_RESOURCE)))


def _quantities(value: object, field: str) -> dict[str, object]:
    """A mapping of resource name to quantity, each checked."""
    result = {}
    for key, amount in schema.mapping(value, field, "resource to quantity (cpu: 500m, memory: 256Mi)").items():
        path = schema.join_path(field, key)
        name = _resource_name(key, path)
        if amount is None:
            continue
        try:
            quantity_units(amount, False)  # schema.bounded_quantity, remembered: few quantities recur among many apps
        except (TypeError, ValueError) as exc:
            raise FieldError(path, f"not a Kubernetes quantity {schema.shown(amount)}: {exc}") from None
        result[name] = amount
    return result


def _requests(item: Mapping[Any, Any]) -> tuple[int, int]:
    """cpu (millicores) and memory (bytes) the app requests; `limits` are checked and written as given.

    A limit below the request of the same resource is refused, as the API
    server would refuse the Deployment's pods.
    """
    resources = schema.mapping(item.get("resources"), "resources", "`requests` and `limits`")
    schema.check_known_keys(resources, RESOURCE_SECTIONS, "resources")
    limits = _quantities(resources.get("limits"), "resources.limits")
    requests = _quantities(resources.get("requests"), "resources.requests")
    for name, limit in limits.items():
        if name in requests and schema.quantity(limit) < schema.quantity(requests[name]):
            raise FieldError(
                f"resources.limits.{name}",
                f"{schema.shown(limit)} is below the request {schema.shown(requests[name])}: a limit must be at "
                "least the request (Kubernetes refuses such a pod)",
            )
    cpu = quantity_units(requests["cpu"], True) if "cpu" in requests else 0
    memory = quantity_units(requests["memory"], False) if "memory" in requests else 0
    return cpu, memory


def _cpu_demand(value: object) -> int:
    """`cpu_demand`: the cores the app would use if it had them (a quantity such as 1 or 500m), in millicores."""
    if value is None:
        return 0
    try:
        schema.bounded_quantity(value)
        millicores = quantity_units(value, True)
    except (TypeError, ValueError) as exc:
        raise FieldError("cpu_demand", f"not a CPU quantity {schema.shown(value)}: {exc}") from None
    return millicores


def _env(value: object) -> None:
    for key, setting in schema.mapping(value, "env", "variable name to value").items():
        path = schema.join_path("env", key)
        if not isinstance(key, str) or not schema.ENV_NAME.fullmatch(key):
            raise FieldError(
                path, f"{schema.shown(key)} is not an environment variable name (letters, digits, '-', '.', '_', "
                "not starting with a digit)"
            )
        if setting is None or not isinstance(setting, (str, int, float)):
            hint = " (write '' for an empty value)" if setting is None else ""
            raise FieldError(path, f"must be a string, a number or true/false, {schema.got(setting)}{hint}")
        if isinstance(setting, float) and not math.isfinite(setting):
            raise FieldError(path, f"{schema.shown(setting)} is not a finite number")
        if isinstance(setting, int) and abs(setting) > schema.QUANTITY_MAX:
            raise FieldError(path, f"{schema.shown(setting)} is too large a number: quote it")


def _check_item_size(item: Mapping[Any, Any]) -> None:
    """The item as JSON fits APP_ITEM_MAX_BYTES (and is plain JSON data); else name its biggest field."""
    if schema.json_size(item, "", APP_ITEM_MAX_BYTES) <= APP_ITEM_MAX_BYTES:
        return
    sizes = {key: schema.json_size(value, key, APP_ITEM_MAX_BYTES) for key, value in item.items()}
    biggest = max(sizes, key=lambda key: sizes[key])
    raise FieldError(
        biggest,
        f"the app takes more than {APP_ITEM_MAX_BYTES // 1024} KiB as JSON, the most one app may take (it is "
        f"stored in an annotation of its Deployment; {biggest} alone takes "
        f"{'more than ' if sizes[biggest] > APP_ITEM_MAX_BYTES else ''}"
        f"{min(sizes[biggest], APP_ITEM_MAX_BYTES):,} bytes)",
    )


def _app(index: int, name: str, item: Mapping[Any, Any]) -> App:
    image = item.get("image")
    if image is None:
        raise FieldError("image", "missing")
    # Printable text has no whitespace but the plain space (every other is a control or separator character).
    if not isinstance(image, str) or not image or len(image) > IMAGE_MAX or not image.isprintable() or " " in image:
        raise FieldError("image", f"must be an image reference (no spaces, at most {IMAGE_MAX:,} characters), "
                                  f"{schema.got(image)}")
    profile, type_label = _profile(item)
    replicas = schema.whole_number(item.get("replicas", 1), "replicas", 1, MAX_REPLICAS)
    gpus = 0 if item.get("gpus") is None else schema.whole_number(item["gpus"], "gpus", 0, MAX_GPUS)
    cpu, memory = _requests(item)
    selector = schema.labels(item.get("node_selector"), "node_selector")
    node = item.get("node")
    if node is not None:
        schema.dns_subdomain(node, "node")
    schema.string_list(item.get("command"), "command")
    schema.string_list(item.get("args"), "args")
    _env(item.get("env"))
    scheduler = None if item.get("scheduler") is None else schema.choice(item["scheduler"], "scheduler", SCHEDULERS)
    security_context = schema.mapping(item.get("security_context"), "security_context",
                                      "container securityContext field to value (runAsNonRoot: true)")
    for key in security_context:
        if not isinstance(key, str):
            raise FieldError(schema.join_path("security_context", key), "keys must be strings")
    tolerations = schema.tolerations(item.get("tolerations"), "tolerations")
    _check_item_size(item)
    return App(
        index=index,
        name=name,
        profile=profile,
        replicas=replicas,
        cpu_millicores=cpu,
        memory_bytes=memory,
        gpus=gpus,
        node_selector=tuple(sorted(selector.items())),
        pinned_node=node,
        type_label=type_label,
        scheduler=scheduler,
        tolerations=tolerations,
        cpu_demand_millicores=_cpu_demand(item.get("cpu_demand")),
    )


def parse_app(index: int, item: object) -> App:
    """Validate one app item and return it as an App; an AppInputError names the index, the name and the field."""
    if not isinstance(item, Mapping):
        raise AppInputError(index, None, "(item)", f"must be a mapping, {schema.got(item)}")
    name = item.get("name")
    try:
        # Keys first: a typo of `name` itself is named as a typo, not as a missing name.
        schema.check_known_keys(item, APP_FIELDS)
        valid_name = schema.dns_label(name, "name") if name not in (None, "") else schema.missing("name")
        return _app(index, valid_name, item)
    except FieldError as exc:
        raise AppInputError(index, name if isinstance(name, str) else None, exc.field, exc.problem) from None


def normalised_item(item: Mapping[Any, Any]) -> dict[str, Any]:
    """A valid app item with its enumerations as the engine reads them: `type`, `scheduler`, `profile_from`
    and the resources of `profile` in lower case (`scheduler: Extender` is `extender`)."""
    result = dict(item)
    for key in ("type", "scheduler", "profile_from"):
        if isinstance(result.get(key), str):
            result[key] = result[key].lower()
    if isinstance(result.get("profile"), Mapping):
        result["profile"] = {str(key).lower(): value for key, value in result["profile"].items()}
    return result


def parse_flag(value: object, name: str) -> bool:
    """An option that is true or false (`rebalance`, `strict`); the words Ansible's `bool` takes count too."""
    try:
        return schema.flag(value, name)
    except FieldError as exc:
        raise InputError(None, None, exc.field, exc.problem) from None


def _check_list(items: object, error: type[InputError], what: str, maximum: int) -> Sequence[Any]:
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise error(None, None, what, f"must be a list of {what}, {schema.got(items)}")
    if len(items) > maximum:
        raise error(None, None, what, f"{len(items):,} {what}, more than the {maximum:,} one run takes")
    return items


def parse_apps(items: object) -> list[App]:
    """Validate the apps list: its length, each item, names unique, and the pods of all apps within MAX_PODS."""
    apps = [parse_app(index, item) for index, item in enumerate(_check_list(items, AppInputError, "apps", MAX_APPS))]
    first_seen: dict[str, int] = {}
    pods = 0
    for app in apps:
        if app.name in first_seen:
            problem = f"duplicate: apps[{first_seen[app.name]}] has the same name"
            raise AppInputError(app.index, app.name, "name", problem)
        first_seen[app.name] = app.index
        pods += app.replicas
        if pods > MAX_PODS:
            raise AppInputError(
                app.index, app.name, "replicas",
                f"the apps up to this one ask for {pods:,} pods, more than the {MAX_PODS:,} one run places",
            )
    return apps


def _node_quantity(allocatable: Mapping[str, object], key: str, millis: bool) -> int | None:
    """An allocatable amount in millis or units (checked by _quantities), None when the node does not say."""
    value = allocatable.get(key)
    return None if value is None else quantity_units(value, millis)


def _free(allocatable: Mapping[str, object], requested: Mapping[str, object], key: str, millis: bool) -> int | None:
    """What is free of one resource: allocatable less what other pods request (at least 0; None: unbounded)."""
    total = _node_quantity(allocatable, key, millis)
    if total is None:
        return None
    return max(0, total - (_node_quantity(requested, key, millis) or 0))


def _node(index: int, name: str, item: Mapping[Any, Any]) -> Node:
    allocatable = _quantities(item.get("allocatable"), "allocatable")
    requested = _quantities(item.get("requested"), "requested")
    return Node(
        index=index,
        name=name,
        labels=schema.labels(item.get("labels"), "labels"),
        cpu_millicores=_free(allocatable, requested, "cpu", True),
        memory_bytes=_free(allocatable, requested, "memory", False),
        pods=_free(allocatable, requested, "pods", False),
        gpus=_free(allocatable, requested, GPU_RESOURCE, False) or 0,
        taints=schema.taints(item.get("taints"), "taints"),
        ready=True if item.get("ready") is None else schema.flag(item["ready"], "ready"),
    )


def parse_node(index: int, item: object) -> Node:
    """Validate one node: a plain name, or {name, labels, allocatable}."""
    name = item.get("name") if isinstance(item, Mapping) else item
    if not isinstance(item, (str, Mapping)):
        raise NodeInputError(index, None, "(item)", f"must be a node name or a mapping, {schema.got(item)}")
    try:
        if isinstance(item, Mapping):
            schema.check_known_keys(item, NODE_FIELDS)
        valid_name = schema.dns_subdomain(name, "name") if name not in (None, "") else schema.missing("name")
        return Node(index=index, name=valid_name) if isinstance(item, str) else _node(index, valid_name, item)
    except FieldError as exc:
        raise NodeInputError(index, name if isinstance(name, str) else None, exc.field, exc.problem) from None


def parse_nodes(items: object) -> list[Node]:
    """Validate the node list: not empty, at most MAX_NODES, each node valid, names unique."""
    node_items = _check_list(items, NodeInputError, "nodes", MAX_NODES)
    if not node_items:
        raise NodeInputError(None, None, "nodes", "the node list is empty: there is nowhere to place apps")
    nodes = [parse_node(index, item) for index, item in enumerate(node_items)]
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise NodeInputError(node.index, node.name, "name", "duplicate node name")
        seen.add(node.name)
    return nodes


def _ready(status: Mapping[object, object]) -> bool:
    """False when the node's Ready condition says anything but True; a node with no Ready condition counts as ready
    (the node lifecycle controller then taints it node.kubernetes.io/not-ready, which the taint rule reads)."""
    conditions = status.get("conditions")
    if conditions is None:
        return True
    if not isinstance(conditions, Sequence) or isinstance(conditions, (str, bytes)):
        raise FieldError("status.conditions", f"must be a list of conditions, {schema.got(conditions)}")
    for position, condition in enumerate(conditions):
        if not isinstance(condition, Mapping):
            raise FieldError(f"status.conditions[{position}]", f"must be a mapping, {schema.got(condition)}")
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def _node_object(resource: object) -> dict[str, Any] | None:
    """The engine's node mapping of one Node object, None when it is cordoned; FieldError on a malformed one.

    `taints` (key, value, effect of each) is there when the node has taints, `ready: false` when its Ready
    condition is not True.
    """
    if not isinstance(resource, Mapping):
        raise FieldError("(item)", f"must be a Kubernetes Node object (a mapping), {schema.got(resource)}")
    if resource.get("metadata") is None:
        raise FieldError("metadata", "missing: not a Kubernetes Node object")
    metadata = schema.mapping(resource.get("metadata"), "metadata", "name, labels, ...")
    name = schema.dns_subdomain(metadata.get("name") or schema.missing("metadata.name"), "metadata.name")
    spec = schema.mapping(resource.get("spec"), "spec", "Node spec fields")
    if schema.flag(spec.get("unschedulable"), "spec.unschedulable"):
        return None
    status = schema.mapping(resource.get("status"), "status", "Node status fields")
    allocatable = schema.mapping(status.get("allocatable"), "status.allocatable", "resource to quantity")
    kept = {key: allocatable[key] for key in ("cpu", "memory", "pods", GPU_RESOURCE) if key in allocatable}
    _quantities(kept, "status.allocatable")
    node: dict[str, Any] = {
        "name": name, "labels": schema.labels(metadata.get("labels"), "metadata.labels"), "allocatable": kept,
    }
    raw_taints = spec.get("taints")
    if isinstance(raw_taints, Sequence) and not isinstance(raw_taints, (str, bytes)):
        # Only the fields the engine reads (the API server adds timeAdded to NoExecute taints).
        raw_taints = [
            {key: taint.get(key) for key in schema.TAINT_FIELDS if key in taint} if isinstance(taint, Mapping)
            else taint
            for taint in raw_taints
        ]
    found = schema.taints(raw_taints, "spec.taints")
    if found:
        node["taints"] = [
            {"key": key, **({"value": value} if value else {}), "effect": effect} for key, value, effect in found
        ]
    if not _ready(status):
        node["ready"] = False
    return node


def nodes_from_k8s(resources: object, pods: object = None, managed_namespace: object = None) -> list[dict[str, Any]]:
    """Turn `kubernetes.core.k8s_info` Node resources into the engine's node dicts.

    Nodes marked unschedulable (cordoned) are left out, as kube-scheduler
    does; NotReady nodes are kept with `ready: false` (the engine places
    nothing there and says so), tainted ones with their `taints`. With `pods`
    (the k8s_info Pod resources of the cluster), each node gets `requested`:
    what the pods bound to it that this collection does not manage request
    (cluster_state.requested_by_node; the managed ones are the app pods in
    `managed_namespace`). A malformed object fails with a ClusterObjectError
    naming its index in `resources` (or `pods`), its name and the field.
    """
    objects = _check_list(resources, ClusterObjectError, "resources", MAX_NODES)
    result = []
    seen: dict[str, int] = {}
    for index, resource in enumerate(objects):
        metadata = resource.get("metadata") if isinstance(resource, Mapping) else None
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        try:
            node = _node_object(resource)
        except FieldError as exc:
            raise ClusterObjectError(index, name if isinstance(name, str) else None, exc.field, exc.problem) from None
        if node is None:
            continue
        if node["name"] in seen:
            first = seen[node["name"]]
            raise ClusterObjectError(index, node["name"], "metadata.name", f"same name as resources[{first}]")
        seen[node["name"]] = index
        result.append(node)
    if pods is not None:
        requested = requested_by_node(pods, managed_namespace)
        for node in result:
            if node["name"] in requested:
                node["requested"] = requested[node["name"]]
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

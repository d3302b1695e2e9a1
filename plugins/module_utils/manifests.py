"""The Deployment of each app, built as data from the plan and the apps role's settings.

`plan_apps` (apps_plan.py) calls `deployments` with its per-app facts; the
apps role applies the list it returns as it is. Nothing here talks to a
cluster or to Ansible, so every rule below is unit-tested as plain data.

Pinning (apps the engine placed):
- all replicas planned on one node: nodeSelector kubernetes.io/hostname;
- several nodes: required node affinity on the planned hostnames, and a
  topology spread over them whose maxSkew is the plan's own skew (1 when the
  replicas go to distinct nodes), so the scheduler can only reproduce the
  plan's distribution;
- the Recreate strategy: a rolling update would start the new pod beside the
  old one on the same node, which a full node cannot hold and which is itself
  the co-location this collection exists to avoid. A rebalance moves an app to
  other nodes (playbooks/rebalance.yml) with the setting `strategy:
  RollingUpdate` instead (maxSurge 1, maxUnavailable 0): the new pod starts on
  its new node before the old one stops, so the app never lacks a running
  replica, and the engine's move already found room for it there; once the
  move is verified, the rebalance applies the Recreate one again.
Apps with `scheduler: extender` (or `plugins`) get schedulerName and no pinning.

Every pod carries the type label and the profile annotation (a JSON object
resource -> pressure) that plan_apps computed: the scheduler extender reads
them to score its pods and to count the load of every pod already on a node.
The Deployment carries the annotations plan_apps built and size-checked
(cluster_state.deployment_annotations).

Every container gets the role's security context with the app's own
`security_context` merged over it (recursively, so `capabilities: {add:
[NET_BIND_SERVICE]}` keeps `drop: [ALL]`; lists are replaced); a top-level key
the app sets to null is left out.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import schema
from .cluster_state import APP_LABEL
from .contract import CPU_DEMAND_ANNOTATION, PROFILE_ANNOTATION, TYPE_LABEL
from .errors import InputError
from .model import GPU_RESOURCE

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "interference.orchestrator"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# The `scheduler` of apps left to the scheduler-framework plugins build (the
# other value, `extender`, names the scheduler extender: model.SCHEDULERS).
PLUGINS = "plugins"


@dataclass(frozen=True)
class DeploymentSettings:
    """The apps role's settings that shape every Deployment (roles/apps/defaults/main.yml names them apps_*)."""

    namespace: str
    command: tuple[str, ...]
    security_context: Mapping[str, Any] = field(default_factory=dict)
    automount_service_account_token: bool = False
    scheduler_name: str = "interference-scheduler"
    plugins_scheduler_name: str = "gpu-scheduler"
    image_refs: Mapping[str, str] = field(default_factory=dict)
    # The instance that owns the Deployments (apps_instance): prune selects by OWNER_LABEL alone, so
    # it reaches nothing but this instance's apps ("" for no owner label).
    owner: str = ""
    # The strategy of pinned Deployments (STRATEGIES): Recreate, or RollingUpdate for a rebalance's moves.
    strategy: str = "Recreate"


STRATEGIES: dict[str, dict[str, Any]] = {
    "Recreate": {"type": "Recreate"},
    "RollingUpdate": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
}


# On the Deployment only (not its pods): the apps role's prune selects by it.
OWNER_LABEL = "interference.orchestrator/apps-owner"

SETTINGS_FIELDS: tuple[str, ...] = (
    "namespace", "command", "security_context", "automount_service_account_token", "scheduler_name",
    "plugins_scheduler_name", "image_refs", "owner", "strategy",
)


def _settings(value: object) -> DeploymentSettings:
    settings = schema.mapping(value, "deployment", "setting to value")
    schema.check_known_keys(settings, SETTINGS_FIELDS, "deployment")
    namespace = schema.dns_label(settings.get("namespace") or schema.missing("deployment.namespace"),
                                 "deployment.namespace")
    command = settings.get("command")
    schema.string_list(command, "deployment.command")
    if not command:
        raise schema.FieldError("deployment.command", "must be a non-empty list of strings")
    security = schema.mapping(settings.get("security_context"), "deployment.security_context",
                              "container securityContext field to value")
    image_refs = schema.mapping(settings.get("image_refs"), "deployment.image_refs", "image to reference")
    for key, ref in image_refs.items():
        if not isinstance(key, str) or not isinstance(ref, str):
            raise schema.FieldError(schema.join_path("deployment.image_refs", key),
                                    f"must map an image to a reference (text), {schema.got(ref)}")
    return DeploymentSettings(
        namespace=namespace,
        command=tuple(str(part) for part in command),  # type: ignore[attr-defined]  # checked: a list
        security_context={str(key): setting for key, setting in security.items()},
        automount_service_account_token=schema.flag(
            settings.get("automount_service_account_token"), "deployment.automount_service_account_token"
        ),
        scheduler_name=schema.dns_subdomain(settings.get("scheduler_name", "interference-scheduler"),
                                            "deployment.scheduler_name"),
        plugins_scheduler_name=schema.dns_subdomain(settings.get("plugins_scheduler_name", "gpu-scheduler"),
                                                    "deployment.plugins_scheduler_name"),
        image_refs={str(key): str(ref) for key, ref in image_refs.items()},
        owner=schema.label_value(settings.get("owner", ""), "deployment.owner") if settings.get("owner") else "",
        strategy=_strategy(settings.get("strategy", "Recreate")),
    )


def _strategy(value: object) -> str:
    if not isinstance(value, str) or value not in STRATEGIES:
        raise schema.FieldError("deployment.strategy", f"must be one of {', '.join(STRATEGIES)}, {schema.got(value)}")
    return str(value)


def parse_settings(value: object) -> DeploymentSettings:
    """Validate the role's settings (a mapping with SETTINGS_FIELDS); an InputError names the field."""
    try:
        return _settings(value)
    except schema.FieldError as exc:
        raise InputError(None, None, exc.field, exc.problem) from None


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` merged over `base`: nested mappings key by key, anything else (lists too) replaced."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def security_context(defaults: Mapping[str, Any], own: Mapping[str, Any] | None) -> dict[str, Any]:
    """The container securityContext: the app's own merged over the role's, top-level nulls left out."""
    return {key: value for key, value in merged(defaults, own or {}).items() if value is not None}


def max_skew(nodes: Sequence[str]) -> int:
    """The plan's own skew over the nodes it uses (at least 1): most replicas on one node minus fewest."""
    counts = Counter(nodes).values()
    return max(max(counts) - min(counts), 1)


def _quantities(section: object) -> dict[str, Any]:
    return {key: value for key, value in (section or {}).items() if value is not None}  # type: ignore[attr-defined]


def resources(item: Mapping[str, Any]) -> dict[str, Any]:
    """The container's resources: the app's requests and limits, and `gpus` as nvidia.com/gpu in both."""
    given = item.get("resources") or {}
    requests = _quantities(given.get("requests"))
    limits = _quantities(given.get("limits"))
    gpus = 0 if item.get("gpus") is None else schema.whole_number(item["gpus"], "gpus", 0, 2**31)
    if gpus > 0:
        requests[GPU_RESOURCE] = gpus
        limits[GPU_RESOURCE] = gpus
    result = {}
    if requests:
        result["requests"] = requests
    if limits:
        result["limits"] = limits
    return result


def tolerations(toleration: Mapping[str, Any]) -> dict[str, Any]:
    """One toleration of the pod spec, as the app gave it (checked by schema.toleration); the value as text."""
    result = {key: value for key, value in toleration.items() if value is not None}
    if "value" in result:
        result["value"] = str(result["value"])
    return result


def container(item: Mapping[str, Any], settings: DeploymentSettings) -> dict[str, Any]:
    """The app's one container."""
    result: dict[str, Any] = {
        "name": item["name"],
        "image": settings.image_refs.get(item["image"], item["image"]),
        "imagePullPolicy": "IfNotPresent",
        "securityContext": security_context(settings.security_context, item.get("security_context")),
        "command": list(item.get("command") or settings.command),
    }
    if item.get("args"):
        result["args"] = list(item["args"])
    if item.get("env"):
        # By name, as Jinja's dictsort orders them (case-insensitively); values as text.
        env = sorted(item["env"].items(), key=lambda pair: str(pair[0]).lower())
        result["env"] = [{"name": key, "value": str(value)} for key, value in env]
    needs = resources(item)
    if needs:
        result["resources"] = needs
    return result


def pinning(item: Mapping[str, Any], nodes: Sequence[str]) -> dict[str, Any]:
    """The pod spec fields that hold an app's replicas to its planned nodes (nodeSelector, affinity, spread)."""
    spec: dict[str, Any] = {}
    planned = sorted(set(nodes))
    selector = {str(key): str(value) for key, value in (item.get("node_selector") or {}).items()}
    if len(planned) == 1:
        selector[HOSTNAME_LABEL] = planned[0]
    if selector:
        spec["nodeSelector"] = dict(sorted(selector.items()))
    if len(planned) > 1:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": planned}]}
                    ]
                }
            }
        }
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": max_skew(nodes),
                "topologyKey": HOSTNAME_LABEL,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {APP_LABEL: item["name"]}},
                "matchLabelKeys": ["pod-template-hash"],
            }
        ]
    return spec


def deployment(entry: Mapping[str, Any], settings: DeploymentSettings) -> dict[str, Any]:
    """The Deployment of one app from its plan_apps entry (name, app, extender, scheduler, nodes, labels...)."""
    item = entry["app"]
    name = item["name"]
    labels = {APP_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY, TYPE_LABEL: entry["type_label"]}
    pod: dict[str, Any] = {"automountServiceAccountToken": settings.automount_service_account_token}
    if entry["extender"]:
        scheduler = entry.get("scheduler") or item.get("scheduler")
        pod["schedulerName"] = settings.plugins_scheduler_name if scheduler == PLUGINS else settings.scheduler_name
    pod.update(pinning(item, [] if entry["extender"] else entry["nodes"]))
    if item.get("tolerations"):
        pod["tolerations"] = [tolerations(toleration) for toleration in item["tolerations"]]
    pod["containers"] = [container(item, settings)]
    spec: dict[str, Any] = {"replicas": schema.whole_number(item.get("replicas", 1), "replicas", 1, 2**31)}
    if not entry["extender"]:
        spec["strategy"] = copy.deepcopy(STRATEGIES[settings.strategy])
    spec["selector"] = {"matchLabels": {APP_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY}}
    pod_annotations = {PROFILE_ANNOTATION: entry["profile_annotation"]}
    if entry.get("cpu_demand_annotation"):
        pod_annotations[CPU_DEMAND_ANNOTATION] = entry["cpu_demand_annotation"]
    spec["template"] = {"metadata": {"labels": dict(labels), "annotations": pod_annotations}, "spec": pod}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": settings.namespace,
            "labels": {**labels, OWNER_LABEL: settings.owner} if settings.owner else labels,
            "annotations": dict(entry["annotations"]),
        },
        "spec": spec,
    }


def deployments(entries: Sequence[Mapping[str, Any]], settings: DeploymentSettings) -> list[dict[str, Any]]:
    """One Deployment per plan_apps entry, in the same order."""
    return [deployment(entry, settings) for entry in entries]

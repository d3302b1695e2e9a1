"""The plan of one run of the apps role: every app checked, the pinned ones placed, one fact sheet per app.

`plan_apps` is the only place the role computes a plan. It validates the whole
app list first (so an error names the app by its index in `apps`, as the user
wrote it), places the apps that are not left to the scheduler extender, and
returns per app what its Deployment and the schedulers need: its planned
nodes, its type label and its profile, with the profile annotation exactly as
the scheduler extender and the Go plugin read it (contract.py). Given the
apps role's settings, it also returns the Deployments themselves
(manifests.py), which the role applies as they are.

The lines the role prints are presentation, in plugins/plugin_utils/placement_table.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .cluster_state import MANAGED_ANNOTATIONS_MAX_BYTES, annotations_size, deployment_annotations
from .contract import cpu_demand_annotation, profile_annotation, profile_mapping
from .errors import AppInputError, InterferenceError
from .manifests import deployments, parse_settings
from .model import App, normalised_item, parse_apps, parse_flag, parse_nodes
from .placement import plan_placement
from .sharing import parse_sharing


def _facts(item: dict[str, Any], app: App, nodes: list[str] | None) -> dict[str, Any]:
    annotations = deployment_annotations(item, nodes)
    size = annotations_size(annotations)
    if size > MANAGED_ANNOTATIONS_MAX_BYTES:
        # The item alone is within bounds (model.APP_ITEM_MAX_BYTES): what tips it over is one node per replica.
        raise AppInputError(
            app.index, app.name, "replicas" if nodes and len(nodes) > 1 else "(item)",
            f"its Deployment's annotations (the app as JSON and one node name per replica) would take {size:,} "
            f"bytes, more than the {MANAGED_ANNOTATIONS_MAX_BYTES // 1024} KiB the apps role allows "
            "(Kubernetes allows 256 KiB for all annotations of an object, and the apply copies them): "
            "fewer replicas, or split the app",
        )
    return {
        "name": app.name,
        "app": item,
        "extender": nodes is None,
        "scheduler": app.scheduler if nodes is None else None,
        "nodes": nodes or [],
        "type_label": app.type_label,
        "profile": profile_mapping(app.profile),
        "profile_annotation": profile_annotation(app.profile),
        "cpu_demand_annotation": (
            cpu_demand_annotation(app.cpu_demand_millicores) if app.cpu_demand_millicores else None
        ),
        "annotations": annotations,
    }


def plan_apps(
    items: object, nodes: object, previous: object = None, rebalance: object = False, strict: object = False, *,
    deployment: object = None, sharing: object = None, max_moves: object = None, move_from: object = None,
    hold: object = None,
) -> dict[str, Any]:
    """Check every app, place the pinned ones, and return the plan with its report.

    Returns {apps: [...], report: {...}}. `apps` holds one entry per app in
    input order: `name`, `app` (the input item, its enumerations in lower
    case: model.normalised_item), `extender` (true when `scheduler: extender`
    or `scheduler: plugins` leaves it to a scheduler at pod creation),
    `scheduler` (that value, else None), `nodes` (one node name per replica;
    empty for extender apps), `type_label` (cpu, memory or custom), `profile`
    ({resource: pressure}, non-zero pressures only), `profile_annotation`
    (that profile as the JSON of the pod annotation), `cpu_demand_annotation`
    (the pods' CPU demand annotation, None when the app declares no
    `cpu_demand`: contract.py) and `annotations` (those
    of its Deployment: cluster_state.deployment_annotations, at most
    MANAGED_ANNOTATIONS_MAX_BYTES). `report` is Plan.report() of the pinned
    apps (an empty plan when none). With `deployment`, the role's settings
    (manifests.SETTINGS_FIELDS), the result also holds `manifests`: one
    Deployment per app, in the order of `apps` (manifests.deployments).
    `sharing` is placement.place's: what nodes share (sharing.py); `max_moves`
    too (with `rebalance`: move at most that many running replicas, rebalance.py),
    and so are `move_from` (only replicas on these nodes move) and `hold` (these apps never move).

    Raises AppInputError / NodeInputError, UnschedulableError, and in strict
    mode InterferenceError, as `placement.place` does.
    """
    apps = parse_apps(items)
    node_list = parse_nodes(nodes)
    rebalance = parse_flag(rebalance, "rebalance")
    strict = parse_flag(strict, "strict")
    settings = None if deployment is None else parse_settings(deployment)
    raw = list(items) if isinstance(items, Sequence) else []
    pinned = [app for app in apps if app.scheduler is None]
    try:
        # The engine indexes its apps 0..n-1; its errors are given back the app's index in `items`.
        plan = plan_placement(
            [replace(app, index=position) for position, app in enumerate(pinned)],
            node_list,
            previous=previous,
            rebalance=rebalance,
            sharing=parse_sharing(sharing),
            max_moves=max_moves,
            move_from=move_from,
            hold=hold,
        )
    except AppInputError as exc:
        index = None if exc.index is None else pinned[exc.index].index
        raise AppInputError(index, exc.name, exc.field, exc.problem) from None
    if strict:
        warning = plan.warning()
        if warning:
            raise InterferenceError(f"strict placement: {warning}")
    planned = {app.name: plan.node_names(position) for position, app in enumerate(pinned)}
    entries = [_facts(normalised_item(raw[app.index]), app, planned.get(app.name)) for app in apps]
    result: dict[str, Any] = {"apps": entries, "report": plan.report()}
    if settings is not None:
        result["manifests"] = deployments(entries, settings)
    return result

"""The placement as the apps role prints it: one row per app and node, then the warning and the total.

Presentation of plan_apps' result (module_utils/apps_plan.py), kept out of the
engine: the role prints these lines, nothing reads them back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.manifests import PLUGINS

# Nodes the table names as left out (the report lists them all).
LEFT_OUT_LISTED = 20


def _format_score(score: float) -> str:
    return f"{score:g}"


def placement_table(
    planned: Mapping[str, Any], scheduler_name: str, plugins_scheduler_name: str = "gpu-scheduler",
    sources: Mapping[str, str] | None = None,
) -> list[str]:
    """The placement as printed by the apps role: a table APP TYPE PROFILE NODE INTERFERENCE, then the totals.

    One row per app and node; INTERFERENCE is the sum of the scores of the
    pairs the app forms on that node (0: no noisy neighbour), from the
    report's `interference_by_app` of that node. Apps left to the
    scheduler extender get one row naming `scheduler_name`, apps left to the
    plugins build one naming `plugins_scheduler_name`. The last lines are
    the nodes left out for a reason of their own (NotReady, tainted, full:
    placement.left_out), the plan's warning, when it has one, and its total
    interference (score). PROFILE is where the app's profile came from
    (`sources`, from profiling.profile_sources; `declared` for an app it
    does not name).
    """
    report = planned.get("report") or {}
    by_node = {node["name"]: node.get("interference_by_app") or {} for node in report.get("nodes") or []}
    rows = [["APP", "TYPE", "PROFILE", "NODE", "INTERFERENCE"]]
    sources = sources or {}
    entries = planned.get("apps") or []
    for entry in entries:
        if entry.get("extender"):
            continue
        name = entry["name"]
        nodes = list(entry.get("nodes") or [])
        for node in dict.fromkeys(nodes):
            replicas = nodes.count(node)
            score = by_node.get(node, {}).get(name, 0)
            where = f"{node} ({replicas} replicas)" if replicas > 1 else node
            rows.append([name, entry["type_label"], sources.get(name, "declared"), where, _format_score(score)])
    for entry in entries:
        if entry.get("extender"):
            chooser = plugins_scheduler_name if entry.get("scheduler") == PLUGINS else scheduler_name
            rows.append([entry["name"], entry["type_label"], sources.get(entry["name"], "declared"),
                         f"chosen by {chooser}", "-"])
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    left_out = report.get("left_out") or []
    for entry in left_out[:LEFT_OUT_LISTED]:
        lines.append(f"LEFT OUT: {entry['node']}: {entry['reason']}")
    if len(left_out) > LEFT_OUT_LISTED:
        lines.append(f"LEFT OUT: and {len(left_out) - LEFT_OUT_LISTED:,} more nodes")
    if report.get("warning"):
        lines.append(f"WARNING: {report['warning']}")
    lines.append(f"Total interference: {_format_score(report.get('total_interference', 0))}")
    return lines

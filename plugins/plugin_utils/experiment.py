"""The interference experiment: the placements it compares and the figures it reports.

An experiment runs each app alone (the baseline) and then all apps together
under several placement policies, repeated. Everything here is pure: the
experiment role runs the Jobs, this module says where they go and turns the
raw measurements (results.json) into slowdowns.

Slowdown has no unit: time under a placement / time alone, so 1 is no
interference and 2 means twice as slow. For workloads whose figure is better
when higher (bandwidths, ratings) it is baseline value / value.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dominant_dimension
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place

# The policies an experiment can compare; `baseline` is each app alone and
# `pair` (profiling) each pair of apps alone together on the first node.
POLICIES: tuple[str, ...] = ("baseline", "engine", "alternating", "scheduler", "worst", "pair")


class ExperimentError(PlacementError):
    """Bad experiment input (policy, node count, result line); the message names what is wrong."""


def alternating_plan(apps: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> dict[str, str]:
    """The seed service's policy: apps of each type alternate between the first two nodes.

    The type is the declared `type`, or for apps with only a `profile` the
    resource it presses on most. Returns app name -> node name.
    """
    if len(nodes) < 2:
        raise ExperimentError(f"policy 'alternating' needs 2 schedulable nodes, found {len(nodes)}")
    next_node: dict[str, int] = {}
    plan = {}
    for app in parse_apps(list(apps)):
        kind = app.type_label if app.type_label != "custom" else dominant_dimension(app.profile)
        index = next_node.get(kind, 0)
        plan[app.name] = nodes[index]
        next_node[kind] = (index + 1) % 2
    return plan


def worst_plan(apps: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> dict[str, str]:
    """The worst case: apps pressing on the same resource all share one node.

    Apps are grouped by the resource they press on most; the groups go to the
    nodes in turn (largest group first), so with two types and two nodes each
    type fills one node.
    """
    if len(nodes) < 2:
        raise ExperimentError(f"policy 'worst' needs 2 schedulable nodes, found {len(nodes)}")
    groups: dict[str, list[str]] = {}
    for app in parse_apps(list(apps)):
        groups.setdefault(dominant_dimension(app.profile), []).append(app.name)
    plan = {}
    ordered = sorted(groups.values(), key=lambda names: -len(names))
    for index, names in enumerate(ordered):
        for name in names:
            plan[name] = nodes[index % len(nodes)]
    return plan


def engine_plan(apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any]) -> dict[str, str]:
    """The placement engine's plan (first replica of each app), app name -> node name."""
    plan = place(list(apps), list(nodes), rebalance=True)
    return {app.name: plan.node_names(index)[0] for index, app in enumerate(plan.apps)}


def policy_plans(
    apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any], policies: Sequence[str]
) -> dict[str, dict[str, str | None]]:
    """Per policy, where each app's Job runs: app name -> node name (None: kube-scheduler chooses).

    `nodes` are node names or the engine's node dicts (nodes_from_k8s). The
    baseline runs every app alone on the first node.
    """
    if not isinstance(policies, Sequence) or isinstance(policies, str) or not policies:
        raise ExperimentError("policies must be a non-empty list of " + ", ".join(POLICIES))
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise ExperimentError(f"unknown policy {unknown[0]!r}: expected one of {', '.join(POLICIES)}")
    names = [node.name for node in parse_nodes(list(nodes))]
    apps = list(apps)
    parse_apps(apps)
    plans: dict[str, dict[str, str | None]] = {}
    for policy in policies:
        if policy in ("baseline", "pair"):
            plans[policy] = {app["name"]: names[0] for app in apps}
        elif policy == "engine":
            plans[policy] = dict(engine_plan(apps, nodes))
        elif policy == "alternating":
            plans[policy] = dict(alternating_plan(apps, names))
        elif policy == "worst":
            plans[policy] = dict(worst_plan(apps, names))
        else:
            if len(names) < 2:
                raise ExperimentError(f"policy 'scheduler' needs 2 schedulable nodes, found {len(names)}")
            plans[policy] = {app["name"]: None for app in apps}
    return plans


def build_rounds(
    apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any], policies: Sequence[str], repeats: int
) -> dict[str, Any]:
    """The experiment's rounds: each a set of Jobs that run together, then the next round.

    Per repeat, in policy order: `baseline` gives one round per app (alone on
    the first node), `pair` one round per pair of apps (both on the first
    node), any other policy one round with every app where its plan says.
    Repeats are the outer loop, so slow drift of the machine's load spreads
    over all policies. Returns {plans, rounds: [{index, policy, repeat, jobs:
    [{app, node, pair}]}]} with node None where kube-scheduler chooses.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ExperimentError(f"repeats must be a whole number >= 1, got {repeats!r}")
    plans = policy_plans(apps, nodes, policies)
    names = [app["name"] for app in apps]
    rounds: list[dict[str, Any]] = []

    def add(policy: str, repeat: int, jobs: list[dict[str, Any]]) -> None:
        rounds.append({"index": len(rounds), "policy": policy, "repeat": repeat, "jobs": jobs})

    for repeat in range(repeats):
        for policy, plan in plans.items():
            if policy == "baseline":
                for name in names:
                    add(policy, repeat, [{"app": name, "node": plan[name], "pair": None}])
            elif policy == "pair":
                for i, left in enumerate(names):
                    for right in names[i + 1:]:
                        pair = [left, right]
                        add(policy, repeat, [{"app": n, "node": plan[n], "pair": pair} for n in pair])
            else:
                add(policy, repeat, [{"app": n, "node": plan[n], "pair": None} for n in names])
    return {"plans": plans, "rounds": rounds}


def parse_result_line(log: str) -> dict[str, Any]:
    """The workload's own result: the JSON after the last `RESULT ` line of its log.

    Raises ExperimentError when there is none, or it lacks a positive `value`,
    `better` (higher or lower) or `wall_seconds`.
    """
    lines = [line for line in str(log).splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise ExperimentError("no RESULT line in the log")
    try:
        result = json.loads(lines[-1][len("RESULT "):])
    except json.JSONDecodeError as exc:
        raise ExperimentError(f"RESULT line is not JSON: {exc}") from None
    if not isinstance(result, dict):
        raise ExperimentError("RESULT line is not a JSON object")
    value = result.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ExperimentError(f"RESULT has no positive value: {value!r}")
    if result.get("better") not in ("higher", "lower"):
        raise ExperimentError(f"RESULT 'better' must be higher or lower, got {result.get('better')!r}")
    wall = result.get("wall_seconds")
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or wall < 0:
        raise ExperimentError(f"RESULT has no wall_seconds: {wall!r}")
    return result


def slowdown(baseline_value: float, value: float, better: str) -> float:
    """How much slower than alone (no unit; 1 = as fast as alone).

    value / baseline for figures where lower is better (times), baseline /
    value where higher is better (bandwidths, ratings).
    """
    if baseline_value <= 0 or value <= 0:
        raise ExperimentError(f"values must be positive, got baseline {baseline_value} and {value}")
    if better == "lower":
        return value / baseline_value
    if better == "higher":
        return baseline_value / value
    raise ExperimentError(f"'better' must be higher or lower, got {better!r}")


def _spread(values: Sequence[float]) -> dict[str, float | int | None]:
    return {
        "n": len(values),
        "median": statistics.median(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
    }


def summarize(results: Mapping[str, Any]) -> dict[str, Any]:
    """Slowdown per app and policy from the raw runs of results.json.

    The baseline of an app is the median of its successful baseline values;
    each successful run under a policy gives one slowdown against it. Failed
    runs are counted, never turned into figures. Returns {rows: [{policy,
    app, n, median, min, max, failed}], policies: {policy: {n, median, min,
    max, failed}}, baselines: {app: {value, unit, better, n}}}.
    """
    runs = results.get("runs")
    if not isinstance(runs, Sequence):
        raise ExperimentError("results has no 'runs' list")
    baselines: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.get("policy") == "baseline" and run.get("status") == "succeeded":
            entry = baselines.setdefault(
                run["app"], {"values": [], "unit": run["result"].get("unit"), "better": run["result"]["better"]}
            )
            entry["values"].append(float(run["result"]["value"]))
    per: dict[tuple[str, str], list[float]] = {}
    failed: dict[tuple[str, str], int] = {}
    order: list[tuple[str, str]] = []
    for run in runs:
        key = (run.get("policy"), run.get("app"))
        if key[0] == "baseline":
            continue
        if key not in per:
            per[key] = []
            failed[key] = 0
            order.append(key)
        base = baselines.get(key[1])
        if run.get("status") != "succeeded" or base is None:
            failed[key] += run.get("status") != "succeeded"
            continue
        per[key].append(slowdown(statistics.median(base["values"]), float(run["result"]["value"]), base["better"]))
    rows = [{"policy": p, "app": a, "failed": failed[(p, a)], **_spread(per[(p, a)])} for p, a in order]
    policies: dict[str, Any] = {}
    for policy in dict.fromkeys(p for p, _ in order):
        values = [v for (p, _), vs in per.items() if p == policy for v in vs]
        policies[policy] = {**_spread(values), "failed": sum(f for (p, _), f in failed.items() if p == policy)}
    return {
        "rows": rows,
        "policies": policies,
        "baselines": {
            app: {"value": statistics.median(b["values"]), "unit": b["unit"], "better": b["better"],
                  "n": len(b["values"])}
            for app, b in baselines.items()
        },
    }

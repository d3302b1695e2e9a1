"""Profiles of running apps, and the nodes under held pressure, from Prometheus (playbooks/rebalance.yml).

Three documented queries (`queries`), each over the same window of `window_s`
seconds, answer everything the rebalance reads:

- `pressure_held`: `min_over_time(interference_probe_pressure[W])`, per node
  and resource. A node is *hot* when, for some resource, even the lowest
  pressure of the window reached the threshold: the pressure was held above it
  for the whole window, so one noisy round (or a short burst) moves nothing.
- `pressure_mean`: `avg_over_time(interference_probe_pressure[W])`, the
  pressure each node's probe measured, on average, over the window.
- `app_cpu`: each app pod's CPU use over the window, from cAdvisor
  (`rate(container_cpu_usage_seconds_total[W])`, summed per pod).

An app's *running profile* is its share of the pressure its node's probe
measured: on each node, the mean pressure of each resource is divided among
the managed app pods there in proportion to their CPU use (equally when none
used any), and an app with replicas on several nodes takes the mean of its
replicas' shares. With one app on a node that is the observed profile of
playbooks/observe.yml (the app's whole effect on the probe, whose pressure is
already relative to its own idle calibration); with several it assumes the
app that uses more CPU causes more of each pressure. The class is the
dominant resource (observed.classify).

Limits: the probe's calibration is the idle value it measured when it
started, so a probe restarted under load reads less pressure; on kind the
`llc` and `memory_bandwidth` signals are shared by every worker (one memory
bus), so a streamer on one worker shows on the others' probes too, and is
credited to the apps there (docs/monitoring.md, "Isolation on kind").

Everything here is computed from the answers alone (results.json keeps them),
so the report can be derived again from the stored run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import APP_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import RESOURCES
from ansible_collections.interference.orchestrator.plugins.plugin_utils.observed import classify

# Bounds of the settings (refused before anything is read or applied).
WINDOW_MIN_S, WINDOW_MAX_S = 20, 86_400
MOVES_MAX = 100

QUERY_TEMPLATES: dict[str, str] = {
    "pressure_held": "min_over_time(interference_probe_pressure[{window}s])",
    "pressure_mean": "avg_over_time(interference_probe_pressure[{window}s])",
    "app_cpu": ('sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace="{namespace}",'
                'container!="",container!="POD"}}[{window}s]))'),
}


class RebalanceError(PlacementError):
    """A rebalance setting out of range, or an answer of Prometheus it cannot use."""


def check_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The rebalance settings, checked: threshold (0..1], window_s (20..86,400), max_moves (0..100), namespace."""
    def number(key: str, low: float, high: float, whole: bool = False) -> float:
        value = settings.get(key)
        kind = int if whole else int | float
        if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
            what = "a whole number" if whole else "a number"
            raise RebalanceError(f"rebalance setting {key!r}: expected {what} from {low:g} to {high:g}, got {value!r}")
        return value

    threshold = number("threshold", 0, 1)
    if threshold == 0:
        raise RebalanceError("rebalance setting 'threshold': expected a number above 0 (0 would call every node hot)")
    namespace = settings.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise RebalanceError(f"rebalance setting 'namespace': expected a namespace name, got {namespace!r}")
    return {"threshold": float(threshold), "window_s": int(number("window_s", WINDOW_MIN_S, WINDOW_MAX_S, True)),
            "max_moves": int(number("max_moves", 0, MOVES_MAX, True)), "namespace": namespace}


def queries(settings: Mapping[str, Any]) -> dict[str, str]:
    """The PromQL of each query (module doc), for the checked settings."""
    checked = check_settings(settings)
    return {name: template.format(window=checked["window_s"], namespace=checked["namespace"])
            for name, template in QUERY_TEMPLATES.items()}


def _vector(answers: Mapping[str, Any], name: str, promql: Mapping[str, str] | None = None) -> list[Mapping[str, Any]]:
    answer = answers.get(name)
    if not isinstance(answer, Mapping) or answer.get("status") != "success":
        error = answer.get("error", answer) if isinstance(answer, Mapping) else answer
        raise RebalanceError(f"Prometheus did not answer the query {name} ({_shown(name, promql)}): {error}")
    result = answer.get("data", {}).get("result")
    if not isinstance(result, list):
        raise RebalanceError(f"Prometheus's answer to the query {name} holds no result vector")
    return result


def _shown(name: str, promql: Mapping[str, str] | None) -> str:
    """The PromQL of a query as it was asked (its template when not given)."""
    return (promql or {}).get(name) or QUERY_TEMPLATES[name]


def node_pressures(
    answers: Mapping[str, Any], name: str, promql: Mapping[str, str] | None = None,
) -> dict[str, dict[str, float]]:
    """Node -> resource -> value of a pressure query's answer."""
    found: dict[str, dict[str, float]] = {}
    for sample in _vector(answers, name, promql):
        labels = sample.get("metric", {})
        if labels.get("resource") in RESOURCES and labels.get("node"):
            found.setdefault(str(labels["node"]), {})[str(labels["resource"])] = float(sample["value"][1])
    return found


def hot_nodes(
    answers: Mapping[str, Any], workers: Sequence[str], threshold: float, promql: Mapping[str, str] | None = None,
) -> dict[str, dict[str, float]]:
    """The workers whose pressure was held at or above `threshold` for the window: node -> {resource: held}."""
    held = node_pressures(answers, "pressure_held", promql)
    return {node: {r: round(v, 4) for r, v in sorted(held[node].items()) if v >= threshold}
            for node in sorted(workers) if node in held and any(v >= threshold for v in held[node].values())}


def app_pods(pods: Sequence[Mapping[str, Any]], apps: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """App -> [(pod, node)] of its pods bound to a node and not being deleted."""
    found: dict[str, list[tuple[str, str]]] = {app: [] for app in apps}
    for pod in pods:
        meta, spec = pod.get("metadata", {}), pod.get("spec", {})
        app = meta.get("labels", {}).get(APP_LABEL)
        if app in found and spec.get("nodeName") and not meta.get("deletionTimestamp"):
            found[app].append((str(meta["name"]), str(spec["nodeName"])))
    return found


def running_profiles(
    answers: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], apps: Sequence[str],
    config: Mapping[str, Any] | None = None, promql: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """App -> {profile, class, nodes, cpu_cores} from the answers and the pods (module doc).

    Raises RebalanceError naming the app and the query when an app has no
    running pod, no CPU series, or runs on a node without probe series.
    """
    where = app_pods(pods, apps)
    usage_of = {str(s.get("metric", {}).get("pod")): max(0.0, float(s["value"][1]))
                for s in _vector(answers, "app_cpu", promql)}
    mean = node_pressures(answers, "pressure_mean", promql)
    for app, replicas in where.items():
        if not replicas:
            raise RebalanceError(f"app {app}: no running pod of it in the apps namespace: deploy it with site.yml "
                                 "first (rebalance only moves running apps)")
        for pod, node in replicas:
            if pod not in usage_of:
                raise RebalanceError(f"app {app}: no CPU series for its pod {pod} in Prometheus (query app_cpu: "
                                     f"{_shown('app_cpu', promql)}); is cAdvisor scraped, and has the pod run "
                                     "for a whole window?")
            missing = [r for r in RESOURCES if r not in mean.get(node, {})]
            if missing:
                raise RebalanceError(f"app {app}: no probe series for {', '.join(missing)} on its node {node} "
                                     f"(query pressure_mean: {_shown('pressure_mean', promql)}); is the "
                                     "interference probe running there?")
    on_node: dict[str, list[str]] = {}
    for replicas in where.values():
        for pod, node in replicas:
            on_node.setdefault(node, []).append(pod)
    result: dict[str, Any] = {}
    for app, replicas in where.items():
        shares: list[dict[str, float]] = []
        for pod, node in replicas:
            total = sum(usage_of[p] for p in on_node[node])
            part = usage_of[pod] / total if total > 0 else 1 / len(on_node[node])
            shares.append({r: max(0.0, min(1.0, mean[node][r])) * part for r in RESOURCES})
        profile = {r: round(fmean(s[r] for s in shares), 3) for r in RESOURCES}
        result[app] = {"profile": profile, "class": classify(profile, config),
                       "nodes": sorted(node for _pod, node in replicas),
                       "cpu_cores": round(sum(usage_of[pod] for pod, _node in replicas), 4)}
    return result


def with_profiles(apps: Sequence[Mapping[str, Any]], profiles: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The app items the engine plans the rebalance with: each with its running profile as `profile`."""
    planned = []
    for app in apps:
        item = {k: v for k, v in app.items() if k != "profile_from"}
        found = profiles.get(str(app.get("name")))
        if found is not None:
            item["profile"] = {r: v for r, v in found["profile"].items() if v > 0} or {"cpu": 0.0}
        planned.append(item)
    return planned


def moved_apps(plan: Mapping[str, Any], previous: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The apps the plan runs on other nodes than `previous`, in the order of the engine's moves.

    [{app, from: [nodes], to: [nodes]}]; apps left to a scheduler never count.
    """
    order = [str(entry["app"]) for entry in plan.get("report", {}).get("moved", [])]
    changed = []
    for entry in plan["apps"]:
        if entry["extender"]:
            continue
        before = sorted(previous.get(entry["name"], []))
        if before != sorted(entry["nodes"]):
            changed.append({"app": entry["name"], "from": before, "to": sorted(entry["nodes"])})
    rank = {app: index for index, app in reversed(list(enumerate(order)))}
    return sorted(changed, key=lambda m: rank.get(m["app"], len(order)))


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions) selects these labels; an empty one selects all."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if ((operator == "In" and labels.get(key) not in values)
                or (operator == "NotIn" and present and labels[key] in values)
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present)):
            return False
    return True


def held_by_budgets(budgets: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
                    apps: Sequence[str]) -> dict[str, str]:
    """App -> the PodDisruptionBudget that allows no disruption of one of its pods now (such apps never move)."""
    held: dict[str, str] = {}
    for budget in budgets:
        if int(budget.get("status", {}).get("disruptionsAllowed", 0) or 0) >= 1:
            continue
        selector = budget.get("spec", {}).get("selector")
        if selector is None:  # policy/v1: a null selector selects no pod
            continue
        for pod in pods:
            labels = pod.get("metadata", {}).get("labels", {})
            app = labels.get(APP_LABEL)
            if app in apps and app not in held and _matches(selector, labels):
                held[str(app)] = str(budget.get("metadata", {}).get("name"))
    return dict(sorted(held.items()))


def _row(values: Sequence[object]) -> str:
    return "| " + " | ".join(str(v) for v in values) + " |"


def report(results: Mapping[str, Any]) -> str:
    """The rebalance report (markdown), derived from results.json alone."""
    config = results["config"]
    before = results["before"]["answers"]
    workers = list(results["workers"])
    hot = hot_nodes(before, workers, config["threshold"])
    profiles = running_profiles(before, results["pods"], results["apps"])
    plan = results["plan"]
    lines = [
        f"# Rebalance of {results['started']}", "",
        f"Threshold {config['threshold']:g}, window {config['window_s']} s, at most {config['max_moves']} move(s); "
        f"Prometheus queries as in plugins/plugin_utils/running.py.", "",
        "## Nodes (probe pressure over the window before the moves)", "",
        _row(["node", "resource", "held (window minimum)", "mean before", "mean after"]),
        _row(["---"] * 5),
    ]
    held = node_pressures(before, "pressure_held")
    mean = node_pressures(before, "pressure_mean")
    after = node_pressures(results["after"]["answers"], "pressure_mean") if results.get("after") else {}
    for node in workers:
        for resource in RESOURCES:
            mark = " (hot)" if resource in hot.get(node, {}) else ""
            shown = [f"{d[node][resource]:.3f}" if resource in d.get(node, {}) else "-" for d in (held, mean, after)]
            lines.append(_row([node, resource, shown[0] + mark, shown[1], shown[2]]))
    lines += ["", f"Hot nodes: {', '.join(hot) or 'none'}.", "",
              "## Running profiles (share of the node's probe pressure, by CPU use)", "",
              _row(["app", "nodes", "CPU (cores)", *RESOURCES, "class"]), _row(["---"] * (4 + len(RESOURCES)))]
    for app, entry in profiles.items():
        lines.append(_row([app, ", ".join(entry["nodes"]), f"{entry['cpu_cores']:.3f}",
                           *(f"{entry['profile'][r]:.3f}" for r in RESOURCES), entry["class"]]))
    held_apps = results.get("held_by_budgets") or {}
    lines += ["", "## Moves", ""]
    if held_apps:
        lines.append("Held by a PodDisruptionBudget: " + ", ".join(f"{a} ({b})" for a, b in held_apps.items()) + ".")
    moves = plan["moves"]
    lines += [f"- {m['app']}: {', '.join(m['from'])} -> {', '.join(m['to'])}" for m in moves] or ["- none"]
    lines += ["", f"Predicted interference (running profiles): {plan['predicted_before']:g} before, "
              f"{plan['predicted_after']:g} after.",
              "Applied: " + ("yes, one Deployment at a time, each verified." if results.get("applied") else
                             "no (check mode, or nothing to move)."), ""]
    if results.get("after"):
        ended = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(results["after"]["time"])))
        lines.append(f"Measured after: the mean over the {config['window_s']} s window ending "
                     f"{ended} UTC, once the moves were made.")
    return "\n".join(lines) + "\n"

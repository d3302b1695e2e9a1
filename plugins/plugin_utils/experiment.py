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

from .experiment_model import median_interval, pearson, predicted_scores, spearman

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


def engine_plan(apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any], sharing: object = None) -> dict[str, str]:
    """The placement engine's plan (first replica of each app), app name -> node name.

    `sharing` ({label, pressures}) is what the apps role passes as `apps_sharing`,
    so the policy runs the plan site.yml would make for the same apps and nodes.
    """
    plan = place(list(apps), list(nodes), rebalance=True, sharing=sharing)
    return {app.name: plan.node_names(index)[0] for index, app in enumerate(plan.apps)}


def policy_plans(
    apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any], policies: Sequence[str], sharing: object = None
) -> dict[str, dict[str, str | None]]:
    """Per policy, where each app's Job runs: app name -> node name (None: kube-scheduler chooses).

    `nodes` are node names or the engine's node dicts (nodes_from_k8s). The
    baseline runs every app alone on the first node. `sharing` goes to the
    engine's plan (engine_plan).
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
            plans[policy] = dict(engine_plan(apps, nodes, sharing))
        elif policy == "alternating":
            plans[policy] = dict(alternating_plan(apps, names))
        elif policy == "worst":
            plans[policy] = dict(worst_plan(apps, names))
        else:
            if len(names) < 2:
                raise ExperimentError(f"policy 'scheduler' needs 2 schedulable nodes, found {len(names)}")
            plans[policy] = {app["name"]: None for app in apps}
    return plans


def job_name(round_index: int, app: str) -> str:
    """The Job of an app in a round: `exp-r<round>-<app>`, cut to 63 characters (a DNS label)."""
    return f"exp-r{round_index}-{app}"[:63].rstrip("-")


def _whole(value: object) -> bool:
    """Whether `value` is an int >= 1 (true/false is no number)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def app_scales(apps: Sequence[Mapping[str, Any]], scale: object, scales: object) -> dict[str, int]:
    """RUN_BENCHMARK_SCALE per app: `scales` (app name -> whole number) where it names the app, else `scale`.

    Workloads differ in length by a factor of ten at one scale (mbw about 1 s,
    7-Zip about 10 s); per-app scales make them overlap their neighbours for
    most of their run. Raises ExperimentError naming the field and the app.
    """
    if not _whole(scale):
        raise ExperimentError(f"experiment_scale must be a whole number >= 1, got {scale!r}")
    if scales is None:
        scales = {}
    if not isinstance(scales, Mapping):
        raise ExperimentError(f"experiment_app_scales must be a mapping of app name to scale, got {scales!r}")
    names = [app["name"] for app in apps]
    for name, value in scales.items():
        if name not in names:
            known = ", ".join(names)
            raise ExperimentError(f"experiment_app_scales: {name!r} is not an app of the experiment ({known})")
        if not _whole(value):
            raise ExperimentError(f"experiment_app_scales[{name!r}]: must be a whole number >= 1, got {value!r}")
    return {name: int(scales.get(name, scale)) for name in names}


def build_rounds(
    apps: Sequence[Mapping[str, Any]], nodes: Sequence[Any], policies: Sequence[str], repeats: int, *,
    sharing: object = None, scale: object = 1, scales: object = None,
) -> dict[str, Any]:
    """The experiment's rounds: each a set of Jobs that run together, then the next round.

    Per repeat, in policy order: `baseline` gives one round per app (alone on
    the first node), `pair` one round per pair of apps (both on the first
    node), any other policy one round with every app where its plan says.
    Repeats are the outer loop, so slow drift of the machine's load spreads
    over all policies. Returns {plans, scales, rounds: [{index, policy,
    repeat, jobs: [{app, node, pair, job, scale}]}]} with node None where
    kube-scheduler chooses, job the name of the app's Job in that round
    (job_name) and scale its RUN_BENCHMARK_SCALE (app_scales). `sharing`
    goes to the engine's plan.
    """
    if not _whole(repeats):
        raise ExperimentError(f"repeats must be a whole number >= 1, got {repeats!r}")
    plans = policy_plans(apps, nodes, policies, sharing)
    names = [app["name"] for app in apps]
    per_app = app_scales(apps, scale, scales)
    rounds: list[dict[str, Any]] = []

    def add(policy: str, repeat: int, jobs: list[dict[str, Any]]) -> None:
        index = len(rounds)
        jobs = [{**job, "job": job_name(index, job["app"]), "scale": per_app[job["app"]]} for job in jobs]
        rounds.append({"index": index, "policy": policy, "repeat": repeat, "jobs": jobs})

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
    return {"plans": plans, "scales": per_app, "rounds": rounds}


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


def _true_conditions(job: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    conditions = (job.get("status") or {}).get("conditions") or []
    return [c for c in conditions if isinstance(c, Mapping) and c.get("status") == "True"]


def _why_not_complete(conditions: Sequence[Mapping[str, Any]]) -> str:
    # "Failed (DeadlineExceeded: Job was active longer than specified deadline)".
    described = []
    for condition in conditions:
        detail = ": ".join(str(part) for part in (condition.get("reason"), condition.get("message")) if part)
        described.append(f"{condition.get('type')} ({detail})" if detail else str(condition.get("type")))
    return ", ".join(described) or "still running at the timeout"


def pod_termination(pod: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What the pod of a run says of its end, for a failed run's record.

    {pod, node, phase, reason, message, container: {state, reason, exit_code,
    signal, message}}: the kubelet's word (`Evicted`), the runtime's
    (`OOMKilled`, exit code 137) or a container that never started
    (`ErrImageNeverPull`). None when the Job left no pod.
    """
    if not pod:
        return None
    status = pod.get("status") or {}
    record: dict[str, Any] = {
        "pod": (pod.get("metadata") or {}).get("name"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "phase": status.get("phase"),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "container": None,
    }
    for container in status.get("containerStatuses") or []:
        for state, detail in (container.get("state") or {}).items():
            if isinstance(detail, Mapping) and state in ("terminated", "waiting"):
                record["container"] = {
                    "state": state,
                    "reason": detail.get("reason"),
                    "exit_code": detail.get("exitCode"),
                    "signal": detail.get("signal"),
                    "message": detail.get("message"),
                }
    return record


def _describe_termination(termination: Mapping[str, Any] | None) -> str:
    if termination is None:
        return "no pod left"
    parts = [f"pod {termination['pod']} on {termination['node'] or 'no node'}, {termination['phase']}"]
    if termination["reason"] or termination["message"]:
        parts.append(": ".join(str(p) for p in (termination["reason"], termination["message"]) if p))
    container = termination["container"]
    if container:
        text = f"container {container['state']} {container['reason'] or ''}".rstrip()
        if container["exit_code"] is not None:
            text += f", exit code {container['exit_code']}"
        if container["signal"]:
            text += f", signal {container['signal']}"
        if container["message"]:
            text += f": {container['message']}"
        parts.append(text)
    return "; ".join(parts)


def round_runs(
    experiment_round: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    logs: Mapping[str, str],
    start_at: int,
    *,
    attempt: int = 1,
    attempts: int = 1,
) -> list[dict[str, Any]]:
    """The run records of one attempt at a round, as results.json keeps them.

    `experiment_round` is a round of build_rounds (each job names its Job);
    `jobs` and `pods` are the round's Job and Pod objects as the API server
    returned them, `logs` each Job's log by Job name. A run succeeded when
    its Job completed and its log holds a valid RESULT line. A failed run's
    `error` says why, with the Job's conditions and, in `termination`, what
    its pod said of its end (evicted, OOM-killed, never started), so that
    a failure on a shared host can be told from the workload's own. When a
    run failed and `attempt` < `attempts`, the round will be run again: every
    run of this attempt is marked `superseded` (its neighbours did not run
    as planned either) and no figure is taken from it.
    """
    if not _whole(attempt):
        raise ExperimentError(f"attempt must be a whole number >= 1, got {attempt!r}")
    if not _whole(attempts):
        raise ExperimentError(f"experiment_round_attempts must be a whole number >= 1, got {attempts!r}")
    by_name = {(job.get("metadata") or {}).get("name"): job for job in jobs}
    runs = []
    for planned in experiment_round["jobs"]:
        name = planned["job"]
        job = by_name.get(name)
        conditions = _true_conditions(job) if job else []
        own_pods = sorted(
            (p for p in pods if ((p.get("metadata") or {}).get("labels") or {}).get("job-name") == name),
            key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""),
        )
        pod = own_pods[-1] if own_pods else None
        log = logs.get(name) or ""
        error = None
        result = None
        if job is None:
            error = f"Job {name} was not found"
        elif "Complete" not in {c.get("type") for c in conditions}:
            error = f"Job {name} did not complete: {_why_not_complete(conditions)}"
        else:
            try:
                result = parse_result_line(log)
            except ExperimentError as exc:
                error = str(exc)
        termination = None
        if error:
            termination = pod_termination(pod)
            error += f" [{_describe_termination(termination)}]"
        runs.append({
            "round": experiment_round["index"], "policy": experiment_round["policy"],
            "repeat": experiment_round["repeat"], "attempt": attempt, "app": planned["app"],
            "pair": planned.get("pair"), "job": name, "planned_node": planned.get("node"),
            "node": ((pod or {}).get("spec") or {}).get("nodeName"), "start_at": int(start_at),
            "status": "failed" if error else "succeeded", "result": result, "error": error,
            "termination": termination, "log": log, "scale": planned.get("scale"),
        })
    retried = attempt < attempts and any(run["status"] == "failed" for run in runs)
    for run in runs:
        run["superseded"] = retried
    return runs


def counted_runs(runs: Sequence[Any]) -> list[Any]:
    """The runs that count: every run but those of an attempt that was run again (`superseded`)."""
    return [run for run in runs if not run.get("superseded")]


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
    interval = median_interval(values)
    return {
        "n": len(values),
        "median": statistics.median(values) if values else None,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
    }


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(results: Mapping[str, Any]) -> dict[str, Any]:
    """Slowdown per app and policy from the raw runs of results.json.

    The baseline of an app is the median of its successful baseline values;
    each successful run under a policy gives one slowdown against it. Failed
    runs are counted, never turned into figures; the runs of an attempt that
    was run again (`superseded`, round_runs) are neither. ci_low and ci_high
    bound the median's 95% bootstrap interval; predicted is the mean of the
    model's interference score (no unit) over the same runs, and model says
    how well those scores rank the measured slowdowns (experiment_model.py).
    Returns {rows: [{policy, app, n, median, min, max, ci_low, ci_high,
    failed, predicted}], policies: {policy: {the same but app}}, baselines:
    {app: {value, unit, better, n}}, model: {n, spearman, pearson}}.
    """
    runs = results.get("runs")
    if not isinstance(runs, Sequence):
        raise ExperimentError("results has no 'runs' list")
    runs = counted_runs(runs)
    baselines: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.get("policy") == "baseline" and run.get("status") == "succeeded":
            entry = baselines.setdefault(
                run["app"], {"values": [], "unit": run["result"].get("unit"), "better": run["result"]["better"]}
            )
            entry["values"].append(float(run["result"]["value"]))
    per: dict[tuple[str, str], list[float]] = {}
    predicted: dict[tuple[str, str], list[float]] = {}
    failed: dict[tuple[str, str], int] = {}
    order: list[tuple[str, str]] = []
    judged: list[tuple[float, float]] = []  # (predicted score, measured slowdown) per run
    for run, score in zip(runs, predicted_scores(results, runs), strict=True):
        key = (run.get("policy"), run.get("app"))
        if key[0] == "baseline":
            continue
        if key not in per:
            per[key] = []
            predicted[key] = []
            failed[key] = 0
            order.append(key)
        base = baselines.get(key[1])
        if run.get("status") != "succeeded" or base is None:
            failed[key] += run.get("status") != "succeeded"
            continue
        measured = slowdown(statistics.median(base["values"]), float(run["result"]["value"]), base["better"])
        per[key].append(measured)
        if score is not None:
            predicted[key].append(score)
            judged.append((score, measured))
    rows = [
        {"policy": p, "app": a, "failed": failed[(p, a)], **_spread(per[(p, a)]), "predicted": _mean(predicted[(p, a)])}
        for p, a in order
    ]
    policies: dict[str, Any] = {}
    for policy in dict.fromkeys(p for p, _ in order):
        values = [v for (p, _), vs in per.items() if p == policy for v in vs]
        scores = [v for (p, _), vs in predicted.items() if p == policy for v in vs]
        policies[policy] = {**_spread(values), "failed": sum(f for (p, _), f in failed.items() if p == policy),
                            "predicted": _mean(scores)}
    scores, slowdowns = [s for s, _ in judged], [m for _, m in judged]
    return {
        "model": {"n": len(judged), "spearman": spearman(scores, slowdowns), "pearson": pearson(scores, slowdowns)},
        "rows": rows,
        "policies": policies,
        "baselines": {
            app: {"value": statistics.median(b["values"]), "unit": b["unit"], "better": b["better"],
                  "n": len(b["values"])}
            for app, b in baselines.items()
        },
    }

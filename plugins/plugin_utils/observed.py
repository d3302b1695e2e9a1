"""Observed profiles: each app alone on a worker while the interference probe measures every worker.

playbooks/observe.yml runs, in each repeat, one idle window (stressor
`none`) and then every app alone on one worker, and records every worker's
`interference_probe_pressure` from Prometheus into results.json (the format
of the isolation role, plus the `repeat` of each run). Everything here is
computed from that file alone.

An app's observed pressure on a resource, in one repeat, is the rise of the
probe's pressure (0..1) over the same repeat's idle window:

- `cpu`: on the app's own worker. That is the CPU time a newcomer there
  loses to it (time-sharing).
- `llc` and `memory_bandwidth`: the largest rise on any worker. Those probe
  signals are per CPU-second, so time-sharing does not move them; what moves
  them is a neighbour that runs *at the same instant*. On a node with several
  CPUs that is the app's own node; on kind, where each worker has one CPU, it
  is the other worker, on the same memory bus and last-level cache
  (docs/monitoring.md, "Isolation on kind").

Rises below 0 count as 0, above 1 as 1. Over the repeats, the profile is the
median of each resource and its spread the range (max - min); the run has
converged when every app has at least `min_repeats` repeats and every spread
is at most `spread_max`. An app's class is its dominant resource: `cpu` when
`cpu` is its largest pressure, `memory` when `llc` or `memory_bandwidth` is,
and `idle` when none reaches `active_min`.

What a class can tell depends on the testbed. On kind here (1-CPU workers on
one 2-core host) every busy single-threaded app takes the same CPU share from
the probe (the ratio of the CPU requests sets it), while the `llc` and
`memory_bandwidth` signals moved by at most about 0.2, within this host's
noise, for a memory streamer and a busy loop alike (docs/monitoring.md,
"Observed profiles"): all four workloads come out `cpu` there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dot, profile_from_mapping
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment_model import pearson, spearman
from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import (
    RESOURCES,
    check_results,
    mean_pressure,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import pair_key

# Read on every worker (the largest rise counts), not only on the app's own.
SHARED_RESOURCES: tuple[str, ...] = ("llc", "memory_bandwidth")
IDLE = "none"

# Defaults of results.json's `config` (the observe playbook writes its own).
DEFAULTS: dict[str, float] = {"spread_max": 0.15, "min_repeats": 2, "active_min": 0.1}


def _setting(config: Mapping[str, Any], key: str) -> float:
    value = config.get(key, DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PlacementError(f"observed results: config field {key!r}: expected a number >= 0, got {value!r}")
    return float(value)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def run_rises(run: Mapping[str, Any], idle: Mapping[str, Any], nodes: Sequence[str]) -> dict[str, float | None]:
    """One app's rise per resource over the idle window of its repeat (None: no sample to compare)."""
    own = str(run["node"])

    def rise(node: str, resource: str) -> float | None:
        loaded, calm = mean_pressure(run, node, resource), mean_pressure(idle, node, resource)
        return None if loaded is None or calm is None else loaded - calm

    result: dict[str, float | None] = {}
    for resource in RESOURCES:
        found = [rise(own, resource)] if resource not in SHARED_RESOURCES else [rise(n, resource) for n in nodes]
        values = [v for v in found if v is not None]
        result[resource] = round(_clip(max(values)), 4) if values else None
    return result


def classify(profile: Mapping[str, float], config: Mapping[str, Any] | None = None) -> str:
    """The dominant resource: `cpu`, `memory` (llc or memory_bandwidth), or `idle` below `active_min` (module doc)."""
    top = max(RESOURCES, key=lambda r: profile.get(r, 0.0))
    if profile.get(top, 0.0) < _setting(config or {}, "active_min"):
        return "idle"
    return "cpu" if top == "cpu" else "memory"


def observed_profiles(results: Mapping[str, Any]) -> dict[str, Any]:
    """The observed profiles computed from results.json.

    Returns {'apps': {app: {'profile': {resource: median}, 'spread': {resource: max - min},
    'repeats': n, 'class': 'memory' | 'cpu' | 'idle', 'rises': {resource: [per repeat]},
    'node': worker}}, 'converged': bool, 'repeats': the most any app had, and the settings used}.
    An app's resource with no sample in any repeat is left out of its profile and spread.
    """
    nodes, runs = check_results(results)
    config = results.get("config") or {}
    spread_max, min_repeats = _setting(config, "spread_max"), _setting(config, "min_repeats")
    idle_of: dict[Any, Mapping[str, Any]] = {}
    rises: dict[str, dict[str, list[float]]] = {}
    where: dict[str, str] = {}
    counts: dict[str, int] = {}
    for index, run in enumerate(runs):
        repeat = run.get("repeat", 1)
        if run["stressor"] == IDLE:
            idle_of[repeat] = run
            continue
        idle = idle_of.get(repeat)
        if idle is None:
            raise PlacementError(f"observed results: run {index} ({run['stressor']}) has no idle run before it "
                                 f"in repeat {repeat}")
        app = str(run["stressor"])
        where[app] = str(run["node"])
        counts[app] = counts.get(app, 0) + 1
        for resource, value in run_rises(run, idle, nodes).items():
            if value is not None:
                rises.setdefault(app, {}).setdefault(resource, []).append(value)
    apps: dict[str, Any] = {}
    for app, repeats in counts.items():
        found = rises.get(app, {})
        profile = {r: round(median(v), 3) for r, v in found.items()}
        spread = {r: round(max(v) - min(v), 3) for r, v in found.items()}
        apps[app] = {"profile": profile, "spread": spread, "repeats": repeats, "class": classify(profile, config),
                     "rises": found, "node": where[app]}
    converged = bool(apps) and all(
        entry["repeats"] >= min_repeats and len(entry["profile"]) == len(RESOURCES)
        and all(s <= spread_max + 1e-9 for s in entry["spread"].values())
        for entry in apps.values()
    )
    return {"apps": apps, "converged": converged, "repeats": max(counts.values(), default=0),
            "spread_max": spread_max, "min_repeats": int(min_repeats),
            "active_min": _setting(config, "active_min")}


def profiles_file(computed: Mapping[str, Any]) -> dict[str, Any]:
    """What observe.yml writes for `profile_from: observed`: the profiles, and each value's spread and repeats.

    {'observed_profiles': {app: {resource: pressure}} (zeros left out, as the
    engine reads them), 'observed_profiles_detail': {app: {'spread': ...,
    'repeats': n, 'class': ...}}}.
    """
    apps = computed.get("apps") or {}
    return {
        "observed_profiles": {app: {r: v for r, v in e["profile"].items() if v > 0} for app, e in apps.items()},
        "observed_profiles_detail": {
            app: {"spread": e["spread"], "repeats": e["repeats"], "class": e["class"]} for app, e in apps.items()
        },
    }


def observe_cases(
    apps: Sequence[Mapping[str, Any]], node: str, *, image_refs: Mapping[str, str] | None = None,
    command: Sequence[str], cpu_request: str, memory_limit: str,
) -> list[dict[str, Any]]:
    """The runs of one repeat: an idle window on `node`, then each app alone there, as the isolation role's cases.

    An app runs its own `command` and `args` when it gives a command (else
    `command`, the workload loop, with its `args` appended), its `env` (values as
    strings), its image through `image_refs` (the built images' tags, as the
    apps role does), its CPU request and memory limit when it sets them, else
    `cpu_request` (the probe's CPU share depends on the requests' ratio, so
    apps without one are all observed with the same) and `memory_limit`.
    Pod names are `observe-<app>`. An app without a name or an image is an
    error naming its index.
    """
    refs = image_refs or {}
    cases: list[dict[str, Any]] = [{"stressor": IDLE, "node": node, "pod": "observe-idle"}]
    for index, app in enumerate(apps):
        name, image = app.get("name"), app.get("image")
        for field, value in (("name", name), ("image", image)):
            if not isinstance(value, str) or not value:
                raise PlacementError(f"apps[{index}] ({name}): field {field!r}: missing or not a string")
        own = list(app.get("command") or [])
        resources = app.get("resources") or {}
        env = app.get("env") or {}
        cases.append({
            "stressor": name, "node": node, "pod": f"observe-{name}",
            "image": refs.get(str(image), image),
            "command": [str(p) for p in (own or list(command))] + [str(p) for p in app.get("args") or []],
            "env": {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in env.items()},
            "cpu_request": str((resources.get("requests") or {}).get("cpu") or cpu_request),
            "memory_limit": str((resources.get("limits") or {}).get("memory") or memory_limit),
        })
    return cases


def cross_check(profiles: Mapping[str, Mapping[str, float]], scores: Mapping[str, float]) -> dict[str, Any]:
    """Each measured pair's score (profiling.pair_scores) beside the one the observed profiles predict.

    The prediction is the engine's: the dot product of the two profiles. Only
    pairs whose apps both have an observed profile are compared. Returns
    {'pairs': [{'pair', 'predicted', 'measured'}], 'spearman', 'pearson'}
    (None with fewer than 3 pairs or when a side does not vary).
    """
    names, predicted_side, measured_side = [], [], []
    for key, measured in sorted(scores.items()):
        left, _plus, right = key.partition("+")
        if left in profiles and right in profiles:
            predicted = dot(profile_from_mapping(dict(profiles[left])), profile_from_mapping(dict(profiles[right])))
            names.append(pair_key(left, right))
            predicted_side.append(round(predicted, 3))
            measured_side.append(round(float(measured), 3))
    rows = [{"pair": name, "predicted": predicted, "measured": measured}
            for name, predicted, measured in zip(names, predicted_side, measured_side, strict=True)]
    return {"pairs": rows, "spearman": spearman(predicted_side, measured_side),
            "pearson": pearson(predicted_side, measured_side)}

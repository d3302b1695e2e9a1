"""Measured pressure profiles: fit the engine's profiles to co-location slowdowns.

Bubble-Up / Paragon style: run each app alone, then each pair of apps on one
node, and call the pair's *score* the mean extra time the two suffer
((slowdown_a - 1) + (slowdown_b - 1)) / 2, at least 0. The engine models the
interference of two apps as the dot product of their profiles (see
interference.py), so we look for profiles p >= 0 (each entry at most 1, as the
engine requires) with dot(p_a, p_b) close to the measured score of every pair:
least squares by projected gradient, started from the declared profiles so
that a resource keeps its name (pure Python: a few apps, five resources).

Limits: one score per pair (the two directions are averaged, so "a hurts b
more than b hurts a" is lost); pairs only, so what three apps on one node do
is extrapolated as the sum of their pairs; an app's pressure on its own
copies (the diagonal) is not measured; and a score is measured on one
machine with its own CPUs, caches and memory bandwidth.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.interference import PRESSURE_DIMENSIONS, dot
from ansible_collections.interference.orchestrator.plugins.module_utils.model import PROFILE_SOURCES, parse_apps

from .experiment import ExperimentError, counted_runs, slowdown

FIT_STEPS = 20_000
FIT_TOLERANCE = 1e-12
FIT_START_FLOOR = 0.05


def pair_key(left: str, right: str) -> str:
    """The name of an unordered pair of apps, `a+b` with the names sorted."""
    return "+".join(sorted((left, right)))


def pair_scores(results: Mapping[str, Any]) -> dict[str, float]:
    """Measured score (no unit, >= 0) of each pair of apps, from the runs of a profiling results.json.

    Baseline runs (policy `baseline`) give each app's median value alone;
    runs with policy `pair` carry `pair` (the two app names) and give a
    slowdown for their own app. A pair's score is the median over repeats of
    its apps' mean extra slowdown. Failed and superseded runs are left out.
    """
    runs = results.get("runs")
    if not isinstance(runs, Sequence):
        raise ExperimentError("results has no 'runs' list")
    runs = counted_runs(runs)
    alone: dict[str, list[float]] = {}
    better: dict[str, str] = {}
    for run in runs:
        if run.get("policy") == "baseline" and run.get("status") == "succeeded":
            alone.setdefault(run["app"], []).append(float(run["result"]["value"]))
            better[run["app"]] = run["result"]["better"]
    extra: dict[tuple[str, int], list[float]] = {}
    for run in runs:
        if run.get("policy") != "pair" or run.get("status") != "succeeded" or run["app"] not in alone:
            continue
        key = pair_key(*run["pair"])
        value = slowdown(statistics.median(alone[run["app"]]), float(run["result"]["value"]), better[run["app"]])
        extra.setdefault((key, int(run.get("repeat", 0))), []).append(value - 1)
    per_pair: dict[str, list[float]] = {}
    for (key, _), values in extra.items():
        if len(values) == 2:
            per_pair.setdefault(key, []).append(max(0.0, sum(values) / 2))
    return {key: statistics.median(values) for key, values in sorted(per_pair.items())}


def fit_profiles(apps: Sequence[Mapping[str, Any]], scores: Mapping[str, float]) -> dict[str, Any]:
    """Profiles whose dot products fit the measured pair scores (least squares, entries in [0, 1]).

    `apps` give the starting point (their declared `type` or `profile`);
    `scores` map `pair_key(a, b)` to a score >= 0. Returns {profiles: {app:
    {resource: pressure}}, rmse, max_error, pairs: [{pair, measured,
    fitted}]}; rmse and max_error are in score units over the measured pairs.
    """
    parsed = parse_apps(list(apps))
    names = [app.name for app in parsed]
    index = {name: i for i, name in enumerate(names)}
    targets: list[tuple[int, int, float]] = []
    for key, score in scores.items():
        left, _, right = key.partition("+")
        if left not in index or right not in index or left == right:
            raise ExperimentError(f"pair {key!r} does not name two apps of the list")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or score < 0 or math.isnan(score):
            raise ExperimentError(f"pair {key!r}: score must be a number >= 0, got {score!r}")
        targets.append((index[left], index[right], float(score)))
    # A resource nobody presses on has zero gradient for ever, so every start
    # gets a little of each: the fit may then use a resource the declared
    # profiles left out.
    profiles = [[min(1.0, v + FIT_START_FLOOR) for v in app.profile] for app in parsed]

    def loss() -> float:
        return sum((dot(profiles[a], profiles[b]) - s) ** 2 for a, b, s in targets)

    current = loss()
    step = 0.1
    for _ in range(FIT_STEPS):
        grads = [[0.0] * len(PRESSURE_DIMENSIONS) for _ in profiles]
        for a, b, s in targets:
            residual = dot(profiles[a], profiles[b]) - s
            for d in range(len(PRESSURE_DIMENSIONS)):
                grads[a][d] += 2 * residual * profiles[b][d]
                grads[b][d] += 2 * residual * profiles[a][d]
        previous = [row[:] for row in profiles]
        while True:
            for i, row in enumerate(previous):
                profiles[i] = [min(1.0, max(0.0, v - step * g)) for v, g in zip(row, grads[i], strict=True)]
            candidate = loss()
            if candidate <= current or step < 1e-9:
                break
            step /= 2
        improvement = current - candidate
        current = candidate
        step = min(step * 1.5, 1.0)
        if improvement < FIT_TOLERANCE:
            break
    fitted = [dot(profiles[a], profiles[b]) for a, b, _ in targets]
    pairs = [
        {"pair": pair_key(names[a], names[b]), "measured": s, "fitted": f}
        for (a, b, s), f in zip(targets, fitted, strict=True)
    ]
    errors = [f - s for (_, _, s), f in zip(targets, fitted, strict=True)]
    return {
        "profiles": {
            name: {dim: round(v, 3) for dim, v in zip(PRESSURE_DIMENSIONS, profiles[i], strict=True) if v >= 0.0005}
            for i, name in enumerate(names)
        },
        "rmse": math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else 0.0,
        "max_error": max((abs(e) for e in errors), default=0.0),
        "pairs": pairs,
    }


def _source(app: Mapping[str, Any], index: int) -> str | None:
    """The app's `profile_from`, lower-cased (None: its declared profile); anything else is an error naming it."""
    source = app.get("profile_from")
    if source is None:
        return None
    if not isinstance(source, str) or source.lower() not in PROFILE_SOURCES:
        raise ExperimentError(f"apps[{index}] ({app.get('name')}): field 'profile_from': expected one of "
                              f"{', '.join(PROFILE_SOURCES)}, got {source!r}")
    return source.lower()


def _found(profiles: Mapping[str, Any] | None, name: object) -> Mapping[str, float] | None:
    found = profiles.get(str(name)) if isinstance(profiles, Mapping) else None
    return found if isinstance(found, Mapping) else None


def apply_profiles(
    apps: Sequence[Mapping[str, Any]], profiles: Mapping[str, Mapping[str, float]],
    observed: Mapping[str, Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """The apps with a measured or observed `profile` in place of the declared one, for apps that opt in.

    `profile_from: measured` (playbooks/profile.yml, pairwise): the app must
    then have a measured profile. `profile_from: observed` (playbooks/observe.yml,
    one run per app): the observed profile when there is one, else the declared
    `type` or `profile` (profile_sources says which). Other apps are returned as
    they are. The declared `type` is kept (labels and reports show it).
    """
    result = []
    for index, app in enumerate(apps):
        item = dict(app)
        source = _source(item, index)
        item.pop("profile_from", None)
        name = item.get("name")
        if source is None:
            result.append(dict(app))
            continue
        found = _found(profiles if source == "measured" else observed, name)
        if found is None and source == "measured":
            raise ExperimentError(
                f"apps[{index}] ({name}): field 'profile_from': no measured profile for it; run playbooks/profile.yml"
            )
        if found is not None:
            # An app measured to hurt nobody has an all-zero profile, which the
            # engine takes only as an explicit zero.
            item["profile"] = dict(found) or {"cpu": 0.0}
        result.append(item)
    return result


def profile_sources(
    apps: Sequence[Mapping[str, Any]], profiles: Mapping[str, Mapping[str, float]] | None = None,
    observed: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, str]:
    """App name -> where its profile comes from: `declared`, `measured`, `observed`, or `declared (no observed)`."""
    sources = {}
    for index, app in enumerate(apps):
        source = _source(app, index)
        name = str(app.get("name"))
        if source is None:
            sources[name] = "declared"
        elif _found(profiles if source == "measured" else observed, name) is not None:
            sources[name] = source
        else:
            sources[name] = f"declared (no {source})"
    return sources

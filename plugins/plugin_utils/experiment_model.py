"""The experiment as the judge of the engine's model: what the model predicts for each run, and how sure a median is.

The engine scores two replicas on one node by the dot product of their
pressure profiles, and two on different nodes of one group (a host) by the
shared part of it (module_utils/sharing.py). Each run of an experiment ran
beside known neighbours on known nodes, so the model predicts an
interference score for it (no unit: 1 is one neighbour pressing fully on the
same resource). Set beside the slowdown measured for that run, the two say
whether the model ranks placements the way the machine does: the Spearman
rank correlation over every run, and the Pearson correlation for scale.

A median of a few repeats says little on a noisy host; its 95% interval
(percentile bootstrap, resampled with a fixed seed so the same results.json
gives the same report) says how little.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.interference import dot
from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import parse_sharing

# Resamples of the percentile bootstrap, and its seed (the report must not change between two derivations).
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261204
CONFIDENCE = 0.95


def median_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% percentile-bootstrap interval of the median of `values` (their unit), None for no values.

    One value gives (value, value): a single run has no spread to resample,
    which the report shows as n = 1, not as certainty.
    """
    if not values:
        return None
    if len(values) == 1:
        return (values[0], values[0])
    rng = random.Random(BOOTSTRAP_SEED)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _sample in range(BOOTSTRAP_SAMPLES))
    tail = (1 - CONFIDENCE) / 2
    return (medians[int(tail * (BOOTSTRAP_SAMPLES - 1))], medians[math.ceil((1 - tail) * (BOOTSTRAP_SAMPLES - 1))])


def _ranks(values: Sequence[float]) -> list[float]:
    # Ties share the mean of their ranks.
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def pearson(left: Sequence[float], right: Sequence[float]) -> float | None:
    """Pearson's correlation (-1..1), None with fewer than 3 pairs or when either side does not vary."""
    if len(left) != len(right) or len(left) < 3:
        return None
    mean_left, mean_right = statistics.fmean(left), statistics.fmean(right)
    cov = sum((a - mean_left) * (b - mean_right) for a, b in zip(left, right, strict=True))
    var_left = sum((a - mean_left) ** 2 for a in left)
    var_right = sum((b - mean_right) ** 2 for b in right)
    if var_left <= 0 or var_right <= 0:
        return None
    return cov / math.sqrt(var_left * var_right)


def spearman(left: Sequence[float], right: Sequence[float]) -> float | None:
    """Spearman's rank correlation (-1..1), ties ranked by their mean; None as for pearson."""
    if len(left) != len(right):
        return None
    return pearson(_ranks(left), _ranks(right))


def predicted_scores(results: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """The model's interference score (no unit) of each run in `runs`, from its neighbours in the same attempt.

    A neighbour on the run's node adds the dot product of the two profiles;
    one on another node of the same group (config.sharing's label, as the
    apps role's `sharing`) adds the shared part, sum over resources of
    share_r p_r q_r. None for a run whose node is unknown (no pod).
    """
    apps = list(results.get("apps") or [])
    if not apps:
        return [None] * len(runs)
    profiles = {app.name: app.profile for app in parse_apps(apps)}
    sharing = parse_sharing((results.get("config") or {}).get("sharing"))
    group: dict[str, int] = {}
    if sharing.active:
        nodes = parse_nodes(list((results.get("cluster") or {}).get("nodes") or []))
        group = dict(zip((node.name for node in nodes), sharing.groups(nodes), strict=True))
    together: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for run in runs:
        together.setdefault((run.get("round"), run.get("attempt", 1)), []).append(run)
    scores: list[float | None] = []
    for run in runs:
        node = run.get("node")
        if node is None or run.get("app") not in profiles:
            scores.append(None)
            continue
        mine = profiles[run["app"]]
        score = 0.0
        for other in together[(run.get("round"), run.get("attempt", 1))]:
            theirs = profiles.get(str(other.get("app")))
            if other is run or theirs is None or other.get("node") is None:
                continue
            if other["node"] == node:
                score += dot(mine, theirs)
            elif node in group and group[node] == group.get(other["node"]) and group[node] < 0:
                score += sum(s * a * b for s, a, b in zip(sharing.shares, mine, theirs, strict=True))
        scores.append(score)
    return scores

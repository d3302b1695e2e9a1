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

from ansible_collections.interference.orchestrator.plugins.module_utils.model import parse_apps, parse_nodes
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import parse_sharing
from ansible_collections.interference.orchestrator.plugins.module_utils.timesharing import slowdowns

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

    The score is the predicted slowdown less 1 (module_utils/timesharing.py,
    the engine's one formula): a neighbour on the run's node adds the dot
    product of the two profiles, one on another node of the same group
    (config.sharing's label, as the apps role's `sharing`) the shared part,
    sum over resources of share_r p_r q_r. When the apps declare a
    `cpu_demand`, a node whose demand exceeds its CPUs slows its apps by the
    ratio and its neighbours meet for the share of time they run at once.
    None for a run whose node is unknown (no pod).
    """
    apps = parse_apps(list(results.get("apps") or []))
    if not apps:
        return [None] * len(runs)
    by_name = {app.name: app for app in apps}
    nodes = parse_nodes(list((results.get("cluster") or {}).get("nodes") or []))
    node_index = {node.name: node.index for node in nodes}
    sharing = parse_sharing((results.get("config") or {}).get("sharing"))
    together: dict[tuple[Any, Any], list[int]] = {}
    for position, run in enumerate(runs):
        if run.get("app") in by_name and run.get("node") in node_index:
            together.setdefault((run.get("round"), run.get("attempt", 1)), []).append(position)
    scores: list[float | None] = [None] * len(runs)
    for positions in together.values():
        assignment: list[list[int]] = [[] for _app in apps]
        replica: dict[int, tuple[int, int]] = {}
        for position in positions:
            app = by_name[runs[position]["app"]]
            replica[position] = (app.index, len(assignment[app.index]))
            assignment[app.index].append(node_index[runs[position]["node"]])
        predicted = slowdowns(apps, nodes, assignment, sharing)
        for position, (app_index, which) in replica.items():
            scores[position] = predicted[app_index][which] - 1
    return scores

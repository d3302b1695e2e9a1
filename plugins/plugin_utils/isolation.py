"""The testbed's isolation, from the interference probe's pressure (playbooks/isolation.yml).

The playbook runs one stressor (a resource: cpu, llc or memory_bandwidth) at a
time on one worker and records, from Prometheus, every worker's probe
pressure (0..1, no unit: how much less than idle the probe obtained) during
the window, into results.json. Everything here is computed from that file
alone:

- the matrix of a stressor resource: row = the worker the stressor ran on,
  column = the worker observed, value = the mean over the window of the
  observed worker's pressure *of that resource*;
- the response: the same means for every resource the probe measures, so a
  memory stressor's effect on the CPU signal can be read too;
- the first rise: seconds from the stressor's start to the first sample where
  the stressed worker's pressure exceeds every other worker's by a margin; and,
  from `round_ends` (interference_probe_last_round_timestamp_seconds), seconds
  from the start to the end of the probe round that measured it (no scrape or
  query-step delay in it: "within two probe intervals" is read from this one);
- the shares: per stressor resource, how much of the stressed worker's own
  rise above its baseline another worker sees (the observed worker's rise
  above its own baseline, divided by the stressed worker's), clipped to 0..1,
  the median over ordered pairs of workers. That is `pressures` of the
  placement's `sharing` option (sharing.py). A pair whose stressed worker rose
  less than SHARE_MIN_RISE says nothing and is left out; a resource with no
  pair left has no share (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean, median
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError

RESOURCES: tuple[str, ...] = ("cpu", "llc", "memory_bandwidth")

# A stressed worker's own rise above its baseline below this (pressure, 0..1)
# is too small to divide by: the pair gives no share.
SHARE_MIN_RISE = 0.05

# The PromQL the playbook records: one series per worker and resource, the
# labels `node` and `resource` are required (the join of this module).
PRESSURE_QUERY = "interference_probe_pressure"


def _samples(run: Mapping[str, Any], node: str, resource: str) -> list[tuple[float, float]]:
    """(time s, pressure) of one worker and resource in a run, inside its window."""
    start, end = float(run["window"][0]), float(run["window"][1])
    for series in run["series"]:
        labels = series["metric"]
        if labels.get("node") == node and labels.get("resource") == resource:
            return [(float(t), float(v)) for t, v in series["values"] if start <= float(t) <= end]
    return []


def mean_pressure(run: Mapping[str, Any], node: str, resource: str) -> float | None:
    """Mean pressure of `resource` on `node` over the run's window; None when no sample."""
    samples = _samples(run, node, resource)
    return fmean(v for _, v in samples) if samples else None


def check_results(results: Mapping[str, Any]) -> tuple[list[str], list[Mapping[str, Any]]]:
    try:
        nodes = list(results["nodes"])
        runs = list(results["runs"])
    except (KeyError, TypeError) as exc:
        raise PlacementError(f"isolation results: missing field {exc} (want 'nodes' and 'runs')") from None
    for index, run in enumerate(runs):
        for field in ("stressor", "node", "window", "series"):
            if field not in run:
                raise PlacementError(f"isolation results: run {index} has no field {field!r}")
    return nodes, runs


def matrices(results: Mapping[str, Any]) -> dict[str, Any]:
    """The isolation matrices and responses computed from results.json.

    Returns {'nodes': [...], 'stressors': [...], 'matrix': {stressor: {stressed: {observed: mean pressure}}},
    'response': {stressor: {stressed: {observed: {resource: mean pressure}}}}, 'baseline': {node: {resource: mean}},
    'first_rise_s' and 'first_rise_round_s': {stressor: {stressed: seconds or None}}}. Means are None where a
    series had no sample.
    """
    nodes, runs = check_results(results)
    stressors = list(dict.fromkeys(run["stressor"] for run in runs if run["stressor"] != "none"))
    margin = float(results.get("config", {}).get("rise_margin", 0.2))
    matrix: dict[str, dict[str, dict[str, float | None]]] = {}
    response: dict[str, dict[str, dict[str, dict[str, float | None]]]] = {}
    first_rise: dict[str, dict[str, float | None]] = {}
    first_rise_round: dict[str, dict[str, float | None]] = {}
    baseline: dict[str, dict[str, float | None]] = {}
    for run in runs:
        if run["stressor"] == "none":
            baseline = {n: {r: mean_pressure(run, n, r) for r in RESOURCES} for n in nodes}
            continue
        s, stressed = run["stressor"], run["node"]
        matrix.setdefault(s, {})[stressed] = {n: mean_pressure(run, n, s) for n in nodes}
        response.setdefault(s, {})[stressed] = {n: {r: mean_pressure(run, n, r) for r in RESOURCES} for n in nodes}
        rise = _first_rise(run, stressed, s, [n for n in nodes if n != stressed], margin)
        first_rise.setdefault(s, {})[stressed] = None if rise is None else rise - float(run["stressor_started"])
        first_rise_round.setdefault(s, {})[stressed] = _round_end(run, stressed, rise)
    shares, share_pairs = _shares(nodes, matrix, baseline)
    return {"nodes": nodes, "stressors": stressors, "matrix": matrix, "response": response, "baseline": baseline,
            "first_rise_s": first_rise, "first_rise_round_s": first_rise_round, "rise_margin": margin,
            "shares": shares, "share_pairs": share_pairs}


def _shares(
    nodes: Sequence[str], matrix: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    baseline: Mapping[str, Mapping[str, float | None]],
) -> tuple[dict[str, float | None], dict[str, dict[str, dict[str, float | None]]]]:
    """Per stressor resource, the share (see the module doc) and each ordered pair's (stressed -> observed)."""
    shares: dict[str, float | None] = {}
    pairs: dict[str, dict[str, dict[str, float | None]]] = {}
    for resource, rows in matrix.items():
        found: list[float] = []
        for stressed, row in rows.items():
            own = row.get(stressed)
            own_rise = None if own is None else own - (baseline.get(stressed, {}).get(resource) or 0.0)
            for observed in nodes:
                if observed == stressed:
                    continue
                seen = row.get(observed)
                share = None
                if own_rise is not None and own_rise >= SHARE_MIN_RISE and seen is not None:
                    rise = seen - (baseline.get(observed, {}).get(resource) or 0.0)
                    share = min(1.0, max(0.0, rise / own_rise))
                    found.append(share)
                pairs.setdefault(resource, {}).setdefault(stressed, {})[observed] = share
        shares[resource] = median(found) if found else None
    return shares, pairs


def _round_ends(run: Mapping[str, Any], node: str) -> dict[float, float]:
    """Sample time -> end time (s) of the probe round `node` reported then; {} when not recorded."""
    for series in run.get("round_ends", []):
        if series["metric"].get("node") == node:
            return {float(t): float(v) for t, v in series["values"]}
    return {}


def _round_end(run: Mapping[str, Any], node: str, at: float | None) -> float | None:
    """Seconds from the stressor's start to the end of the probe round `node` reported at time `at`."""
    end = None if at is None else _round_ends(run, node).get(at)
    return None if end is None else end - float(run["stressor_started"])


def _first_rise(run: Mapping[str, Any], stressed: str, resource: str, others: Sequence[str],
                margin: float) -> float | None:
    """Time (s) of the first sample from the stressor's start where `stressed` leads every other node by margin."""
    started = float(run.get("stressor_started", run["window"][0]))
    window = {**run, "window": [started, run["window"][1]]}
    mine = dict(_samples(window, stressed, resource))
    theirs = [dict(_samples(window, o, resource)) for o in others]
    ends = _round_ends(run, stressed)
    for t in sorted(mine):
        # A sample still showing a round that ended before the stressor started is not its effect.
        if t in ends and ends[t] < started:
            continue
        if all(t in other and mine[t] >= other[t] + margin for other in theirs):
            return t
    return None

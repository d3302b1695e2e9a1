"""Pressure profiles and the interference they cause when apps share a node.

An app's *profile* is a pressure vector over PRESSURE_DIMENSIONS, each entry a
number in [0, 1] (1 = saturates that resource of a node). The interference of
two replicas on one node is the dot product of their profiles (a score with no
unit), so two apps stressing the same resource score 1 and a CPU-bound app next
to a memory-bound one scores 0. A node's interference is the sum over all
pairs of replicas on it, which equals (|S|^2 - sum |p|^2) / 2 for S the sum of
the profiles there: minimising total interference is minimising the sum of
squared node loads, which is what makes the lower bound below cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PRESSURE_DIMENSIONS: tuple[str, ...] = ("cpu", "memory_bandwidth", "llc", "disk_io", "network_io")

Profile = tuple[float, ...]

# The seed vocabulary: `type: cpu` and `type: memory` are one-hot profiles.
TYPE_PROFILES: dict[str, dict[str, float]] = {
    "cpu": {"cpu": 1.0},
    "memory": {"memory_bandwidth": 1.0},
}

# Scores closer than this are equal: profiles are decimals from YAML, and float
# sums of them must not decide between two plans that are really tied.
EPSILON = 1e-9


def profile_from_mapping(pressures: dict[str, float]) -> Profile:
    """Return the profile vector for a {dimension: pressure} mapping (missing = 0)."""
    return tuple(float(pressures.get(dim, 0.0)) for dim in PRESSURE_DIMENSIONS)


def profile_for_type(app_type: str) -> Profile:
    """Return the one-hot profile of a seed type (`cpu` or `memory`, any case)."""
    return profile_from_mapping(TYPE_PROFILES[app_type.lower()])


def dot(left: Sequence[float], right: Sequence[float]) -> float:
    """Interference score of two profiles placed together (dot product)."""
    return sum(a * b for a, b in zip(left, right, strict=True))


def pair_reason(left: Profile, right: Profile) -> str:
    """Say in words why two profiles interfere: the resources both press on."""
    shared = [
        f"{dim} ({a:g} x {b:g})"
        for dim, a, b in zip(PRESSURE_DIMENSIONS, left, right, strict=True)
        if a > 0 and b > 0
    ]
    return "both stress " + ", ".join(shared) if shared else "no shared resource"


def dominant_dimension(profile: Profile) -> str:
    """Name of the resource a profile presses on most (the first one on ties).

    The type label a user would give a mixed-profile app: what the experiment's
    same-type policies and the benchmarks' label-based schedulers group by.
    """
    best = max(range(len(profile)), key=lambda i: (profile[i], -i))
    return PRESSURE_DIMENSIONS[best]


def node_interference(profiles: Iterable[Profile]) -> float:
    """Sum of pairwise interference among the replicas on one node (score).

    The definition every scorer must reproduce: the Go InterferenceAware
    plugin is checked against it on the shared cases of
    tests/fixtures/interference_cases.json.
    """
    items = list(profiles)
    total = 0.0
    for i, left in enumerate(items):
        for right in items[i + 1 :]:
            total += dot(left, right)
    return total


def _balanced_square_sum(count: int, bins: int) -> int:
    """Least sum of squared counts when `count` unit items go into `bins` bins."""
    quotient, remainder = divmod(count, bins)
    return remainder * (quotient + 1) ** 2 + (bins - remainder) * quotient**2


def interference_lower_bound(
    profiles: Sequence[Profile], node_count: int, group_count: int = 0
) -> float:
    """A lower bound on total interference for these replicas on `node_count` nodes.

    It relaxes every constraint (capacity, selectors, pins, previous placement),
    so it holds for any feasible plan. Per resource dimension, the sum over
    nodes of squared load is at least T^2/N (loads spread evenly) and at least
    the sum of the items' own squares; when every item that touches the
    dimension has the same pressure v (the seed's one-hot types), the exact
    minimum is v^2 times the balanced-count sum, which the engine reaches when
    capacity does not bind.

    Profiles extended by sharing.py carry group coordinates after the
    PRESSURE_DIMENSIONS ones: those are summed per group, so their bins are
    the `group_count` groups (a node alone counts as one).
    """
    if node_count <= 0 or not profiles:
        return 0.0
    squares_sum = 0.0
    for dim in range(len(profiles[0])):
        values = [p[dim] for p in profiles if p[dim] > 0]
        if not values:
            continue
        bins = node_count if dim < len(PRESSURE_DIMENSIONS) else max(1, group_count)
        total = sum(values)
        own = sum(v * v for v in values)
        bound = max(total * total / bins, own)
        if max(values) - min(values) <= EPSILON:
            bound = max(bound, values[0] ** 2 * _balanced_square_sum(len(values), bins))
        squares_sum += bound
    self_sum = sum(dot(p, p) for p in profiles)
    return max(0.0, (squares_sum - self_sum) / 2)

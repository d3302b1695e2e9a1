"""What nodes share: interference between replicas on different nodes of one group.

Nodes on one host (kind workers, VMs on one hypervisor, pods on one NUMA
node) share memory bandwidth and the last-level cache even when their CPUs
are disjoint. `sharing` says so: nodes with the same value of one label form
a group, and `pressures` gives, per resource, the share s_r (0..1) of the
same-node interference that two replicas on *different* nodes of one group
still cause. The score of two replicas with profiles p and q becomes

    sum over resources r of p_r * q_r * share_r(node of p, node of q)

with share_r = 1 on one node, s_r across nodes of one group and 0 across
groups. With no sharing (or every s_r 0) it is the plain dot product of
interference.py, and every plan is the one the engine made before.

How the engine pays for it, without pairs of nodes: for each shared resource,
a profile gets a second coordinate. The node coordinate is sqrt(1 - s_r) p_r,
summed per node; the group coordinate is sqrt(s_r) p_r, summed per group (each
node keeps a copy of its group's sum, which a move updates on the group's
other nodes). One more replica then costs p' . load' as before:

    (1 - s_r) p_r L_node,r + s_r p_r L_group,r

and |p'|^2 = |p|^2, so every search, the lower bound and the exact search run
unchanged on the extended profiles. A node outside every group is a group of
its own, where the two coordinates add up to the plain score.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .interference import EPSILON, PRESSURE_DIMENSIONS, Profile
from .model import App, Node
from .schema import got, shown

SHARING_FIELDS = ("label", "pressures")
# The report lists at most PAIRS_LISTED cross-node pairs, looked for among the
# PAIR_LISTING_MAX_APPS heaviest apps of each group.
PAIRS_LISTED = 20
PAIR_LISTING_MAX_APPS = 100


@dataclass(frozen=True)
class Sharing:
    """Validated sharing: the group label and s_r per resource (PRESSURE_DIMENSIONS order)."""

    label: str | None = None
    shares: tuple[float, ...] = (0.0,) * len(PRESSURE_DIMENSIONS)

    @property
    def active(self) -> bool:
        """True when some resource leaks across the nodes of a group."""
        return self.label is not None and any(s > EPSILON for s in self.shares)

    @functools.cached_property
    def shared_dims(self) -> tuple[int, ...]:
        """The resources with a non-zero share, in PRESSURE_DIMENSIONS order."""
        return tuple(dim for dim, s in enumerate(self.shares) if s > EPSILON) if self.active else ()

    def extend(self, profile: Profile) -> Profile:
        """The engine's profile: the node coordinates, then one group coordinate per shared resource."""
        if not self.shared_dims:
            return profile
        return _extended(profile, self.shares, self.shared_dims)

    def groups(self, nodes: Sequence[Node]) -> list[int]:
        """A group id per node: nodes with one value of the label share one; a node without it is alone."""
        ids: dict[str, int] = {}
        result = []
        for position, node in enumerate(nodes):
            value = node.labels.get(self.label) if self.active and self.label is not None else None
            # A node alone gets its position, a labelled group a negative id: never equal.
            result.append(position if value is None else ids.setdefault(value, -1 - len(ids)))
        return result


@functools.lru_cache(maxsize=4096)
def _extended(profile: Profile, shares: tuple[float, ...], dims: tuple[int, ...]) -> Profile:
    node_part = tuple(
        value * math.sqrt(1.0 - shares[dim]) if dim in dims else value for dim, value in enumerate(profile)
    )
    group_part = tuple(profile[dim] * math.sqrt(shares[dim]) for dim in dims)
    return node_part + group_part


NO_SHARING = Sharing()


def cross_node_added(
    profile: Sequence[float], node_load: Sequence[float], group_load: Sequence[float], sharing: Sharing
) -> float:
    """What a replica adds across nodes when it joins a node: sum over shared r of s_r p_r (G_r - N_r).

    `node_load` is the sum of the profiles on the node, `group_load` the sum
    over every node of its group (the node included), so G - N is what the
    group's other nodes hold. The engine gets the same number from its
    extended profiles; the extender scores a pod with this (the shared
    fixture checks both).
    """
    return sum(sharing.shares[dim] * profile[dim] * (group_load[dim] - node_load[dim]) for dim in sharing.shared_dims)


def parse_sharing(value: object) -> Sharing:
    """Validate `sharing` ({label, pressures: {resource: 0..1}}, or None) into a Sharing."""
    if value is None:
        return NO_SHARING
    if not isinstance(value, Mapping):
        raise InputError(None, None, "sharing", f"must be a mapping with 'label' and 'pressures', {got(value)}")
    unknown = [key for key in value if key not in SHARING_FIELDS]
    if unknown:
        raise InputError(
            None, None, f"sharing.{unknown[0]}", f"unknown field {shown(unknown[0])}: expected label and pressures"
        )
    label = value.get("label")
    if not isinstance(label, str) or not label:
        raise InputError(
            None, None, "sharing.label",
            f"must be the node label whose value names the group of nodes that share (a host), {got(label)}",
        )
    pressures = value.get("pressures", {})
    if not isinstance(pressures, Mapping):
        raise InputError(None, None, "sharing.pressures", f"must be a mapping of resource to a share, {got(pressures)}")
    shares = [0.0] * len(PRESSURE_DIMENSIONS)
    for key, share in pressures.items():
        if key not in PRESSURE_DIMENSIONS:
            raise InputError(
                None, None, f"sharing.pressures.{key}",
                f"unknown resource {shown(key)}: expected one of {', '.join(PRESSURE_DIMENSIONS)}",
            )
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise InputError(
                None, None, f"sharing.pressures.{key}",
                f"must be a number from 0 (nothing crosses nodes) to 1 (as on one node), {got(share)}",
            )
        shares[PRESSURE_DIMENSIONS.index(key)] = float(share)
    return Sharing(label=label, shares=tuple(shares))


def sharing_score(
    apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]], sharing: Sharing
) -> dict[str, Any]:
    """The cross-node part of a plan's score: its total, and the worst pairs of apps it comes from.

    A pair of apps a, b of one group scores sum_r s_r a_r b_r times the
    number of their replica pairs on different nodes of the group (an app
    with replicas on two nodes of a group pairs with itself). The total is
    linear in the pods: per group and shared resource, s_r (L_group^2 - sum
    over its nodes of L_node^2) / 2. Pairs are listed among the
    PAIR_LISTING_MAX_APPS heaviest apps of each group only, at most
    PAIRS_LISTED in all.
    """
    if not sharing.shared_dims:
        return {"total": 0.0, "pairs": [], "pairs_not_listed": 0}
    groups = sharing.groups(nodes)
    dims = sharing.shared_dims
    per_group: dict[int, dict[int, dict[int, int]]] = {}  # group -> app -> node -> replicas
    for app_index, replicas in enumerate(assignment):
        for node_index in replicas:
            on_nodes = per_group.setdefault(groups[node_index], {}).setdefault(app_index, {})
            on_nodes[node_index] = on_nodes.get(node_index, 0) + 1
    total = 0.0
    pairs: list[dict[str, Any]] = []
    for group, residents in per_group.items():
        if group >= 0:
            continue  # a node alone: nothing crosses
        for dim in sharing.shared_dims:
            node_loads: dict[int, float] = {}
            for app_index, on_nodes in residents.items():
                value = apps[app_index].profile[dim]
                for node_index, count in on_nodes.items():
                    node_loads[node_index] = node_loads.get(node_index, 0.0) + count * value
            group_load = sum(node_loads.values())
            total += sharing.shares[dim] * (group_load**2 - sum(v * v for v in node_loads.values())) / 2
        host = next(nodes[n].labels[sharing.label or ""] for on in residents.values() for n in on)
        weights = {
            app_index: sum(on_nodes.values()) * math.sqrt(sum(apps[app_index].profile[d] ** 2 for d in dims))
            for app_index, on_nodes in residents.items()
        }
        heaviest = sorted(residents, key=lambda app_index: (-weights[app_index], app_index))[:PAIR_LISTING_MAX_APPS]
        for position, left in enumerate(heaviest):
            for right in heaviest[position:]:
                weight = sum(
                    sharing.shares[dim] * apps[left].profile[dim] * apps[right].profile[dim]
                    for dim in sharing.shared_dims
                )
                if weight <= EPSILON:
                    continue
                on_left, on_right = residents[left], residents[right]
                together = sum(count * on_right.get(node, 0) for node, count in on_left.items())
                apart = sum(on_left.values()) * sum(on_right.values()) - together
                if left == right:
                    apart //= 2
                if apart:
                    pairs.append({
                        "group": host,
                        "nodes": sorted({nodes[n].name for n in (*on_left, *on_right)}),
                        "apps": [apps[left].name, apps[right].name],
                        "score": round(apart * weight, 6),
                    })
    pairs.sort(key=lambda pair: (-pair["score"], pair["group"], pair["apps"]))
    return {"total": total, "pairs": pairs[:PAIRS_LISTED], "pairs_not_listed": max(0, len(pairs) - PAIRS_LISTED)}

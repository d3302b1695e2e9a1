"""The placement engine: where each replica of each app runs.

Objective: minimise total interference (see interference.py) subject to hard
constraints: resource requests fit allocatable (cpu, memory, pods, GPUs),
`node_selector` labels, `node` pins, and replicas of one app spread over
distinct nodes (at most ceil(replicas / eligible nodes) per node). Ties are
broken by balancing requested load, then pod count, then node order, so the
same input always gives the same plan.

How it searches:
1. Replicas kept from `previous` (unless `rebalance`) are fixed first, so adding
   an app never moves a running one.
2. Greedy: the remaining replicas, most constrained first, each go to the
   feasible node where they add the least interference. Nodes are kept in one
   heap per class of (profile, eligibility), so a choice costs O(log N), not
   O(N): 10,000 apps on 1,000 nodes place in well under a second. For one-hot
   profiles (the seed's cpu/memory types) this balances each type's count
   across nodes, which is optimal when capacity does not bind; the plan then
   meets the lower bound and is reported as proven optimal.
3. Local search: single-replica moves that strictly lower interference, until
   none is left. A node that turns a replica down for lack of cpu or memory is
   parked out of the heap until a smaller request asks, so steps 2 and 3 stay
   O(log N) per replica when capacity binds.
4. Annealing: when capacity binds on nodes of different sizes, the greedy plan
   strands big requests on small nodes and no single move fits any more. Unless
   the plan is already within ANNEAL_SKIP_GAP / search_effort of the bound (the
   one-hot fast path, proven by the bound, never gets here), simulated
   annealing proposes relocations and swaps (a replica trades nodes with a
   resident of the target): each proposal is checked against every hard
   constraint before it is priced (requests, pods, GPUs, selectors, pins,
   spread; replicas kept from `previous` never move), worse plans are taken
   with probability exp(-delta / T) as T cools, plans of equal score always,
   and the best plan seen is restored at the end. The budget is a number of
   proposed moves derived from the instance size (ANNEAL_MOVES spread over the
   movable replicas, 100 to 2,000 per replica) times `search_effort`; with a
   fixed seed, the same input gives the same plan on any machine. Where the
   budget is ample (ANNEAL_COLD_FROM moves per replica and more) it starts and
   ends colder. Measured against a plain descent over the same moves and
   against relocations only, it was as good or slightly better, and against
   an independent reference search run until it stopped improving, 0.6% above
   its best plans on 80 x 20 (docs/benchmarks.md).
5. Exact search: when the plan is not proven optimal and the instance is
   small (up to 16 replicas to place: the annealing is skipped there), a
   depth-first branch and bound (with symmetry breaking over identical empty
   nodes) finds the true optimum within a fixed budget of search nodes.

6. Time-sharing: when some app declares a `cpu_demand`, moves and swaps
   that lower the time-shared score (timesharing.py: a node whose demand
   exceeds its CPUs slows every demanding app there) run on the plan, asked
   of the same feasibility check; the method then ends in `+time-sharing`.

Where it lives: this module validates the input, runs the steps above and
reports the plan (Plan, Collisions); search.py holds the searches;
feasibility.py the one rule that says whether a replica may go on a node,
which every step asks.

The report gives the method that ran (greedy, greedy+local-search,
greedy+local-search+annealing, exact, each + time-sharing where step 6 ran),
the lower bound and the gap to it.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import timesharing
from .errors import AppInputError, InputError, InterferenceError
from .feasibility import static_reject_reason, unschedulable_message
from .interference import EPSILON, PRESSURE_DIMENSIONS, Profile, dot, interference_lower_bound, pair_reason
from .model import App, Node, parse_apps, parse_flag, parse_nodes
from .rebalance import MAX_MOVES, bounded_moves
from .schema import got, shown, untolerated
from .search import (
    ANNEAL_SEED,
    EXACT_SEARCH_MAX_REPLICAS,
    _Engine,
    anneal_budget,
    sparse,
    sum_interference,
)
from .sharing import NO_SHARING, Sharing, parse_sharing, sharing_score

__all__ = [
    "Collisions", "Plan", "anneal_budget", "check_search_effort", "find_collisions", "place", "placed_apps",
    "plan_placement", "static_reject_reason", "sum_interference", "unschedulable_message",
]

# The report lists the PAIRS_LISTED worst pairs of interfering apps (and
# counts the rest); the warning names the PAIRS_IN_WARNING worst. On a node
# with more distinct profiles than PAIR_LISTING_MAX_PROFILES, the listed pairs
# are looked for among its heaviest profiles only (see Collisions).
PAIRS_LISTED = 20
PAIRS_IN_WARNING = 10
PAIR_LISTING_MAX_PROFILES = 100


@dataclass
class Plan:
    """A placement: per app (by input order), the node index of each replica."""

    apps: list[App]
    nodes: list[Node]
    assignment: list[list[int]]
    total_interference: float
    lower_bound: float
    proven_optimal: bool
    method: str
    kept: list[str] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    sharing: Sharing = NO_SHARING

    def node_names(self, app_index: int) -> list[str]:
        """Node name of each replica of one app, in replica order."""
        return [self.nodes[n].name for n in self.assignment[app_index]]

    @functools.cached_property
    def collisions(self) -> Collisions:
        """Who interferes with whom, computed once per plan in time linear in the pods (see Collisions)."""
        return find_collisions(self.apps, self.nodes, self.assignment)

    @functools.cached_property
    def cross_node(self) -> dict[str, Any]:
        """The part of the score from pairs on different nodes of one shared group (sharing.py)."""
        return sharing_score(self.apps, self.nodes, self.assignment, self.sharing)

    def interfering_pairs(self) -> list[dict[str, Any]]:
        """The PAIRS_LISTED worst pairs of apps sharing a node, worst first (collisions().pair_count counts all)."""
        return self.collisions.pairs

    def warning(self) -> str | None:
        """A sentence naming the colliding apps, or None for an interference-free plan."""
        if self.total_interference <= EPSILON:
            return None
        found = self.collisions
        listed = [
            f"{p['apps'][0]} and {p['apps'][1]} share {p['node']} ({p['reason']})"
            for p in found.pairs[:PAIRS_IN_WARNING]
        ]
        crossing = self.cross_node["pairs"][: max(0, PAIRS_IN_WARNING - len(listed))]
        listed += [
            f"{p['apps'][0]} and {p['apps'][1]} share {self.sharing.label}={p['group']} across {', '.join(p['nodes'])}"
            for p in crossing
        ]
        shown = "; ".join(listed)
        rest = found.pair_count - min(len(found.pairs), PAIRS_IN_WARNING)
        more = f"; and {rest:,} more pairs" if rest > 0 else ""
        if self.lower_bound > EPSILON or self.proven_optimal:
            why = "zero interference is impossible with these nodes"
        else:
            why = "no interference-free plan was found"
        hint = ""
        kept = set(self.kept)
        if kept and any(
            score > EPSILON and name in kept for per_app in found.by_app for name, score in per_app.items()
        ):
            hint = " (apps kept where they run; rebalance=true may lower it)"
        return (
            f"{why}: total interference {self.total_interference:g}, lower bound {self.lower_bound:g}{hint}: "
            f"{shown}{more}"
        )

    def gap(self) -> float | None:
        """How far above the lower bound the plan is, as a fraction of the bound (0.02 = 2%).

        An upper bound on the distance to the optimum. 0 when the plan meets
        the bound; None when the bound is 0 but the plan is not (no ratio).
        """
        excess = max(0.0, self.total_interference - self.lower_bound)
        if excess <= EPSILON:
            return 0.0
        if self.lower_bound <= EPSILON:
            return None
        return round(excess / self.lower_bound, 6)

    def report(self) -> dict[str, Any]:
        """Plain-data summary: scores, bound, per-node residents and interference, the worst pairs.

        Its size is linear in the pods: `pairs` holds at most PAIRS_LISTED
        pairs, `pairs_not_listed` counts the others, and each node's
        `interference_by_app` gives the score of the pairs each app forms
        there (what the apps role prints per app and node).
        """
        per_node: list[list[str]] = [[] for _ in self.nodes]
        for app_index, replicas in enumerate(self.assignment):
            for node_index in replicas:
                per_node[node_index].append(self.apps[app_index].name)
        found = self.collisions
        return {
            "total_interference": round(self.total_interference, 6),
            "lower_bound": round(self.lower_bound, 6),
            "proven_optimal": self.proven_optimal,
            "gap": self.gap(),
            "method": self.method,
            "nodes": [
                {
                    "name": node.name,
                    "apps": per_node[node.index],
                    "interference": round(found.by_node[node.index], 6),
                    "interference_by_app": {name: round(score, 6) for name, score in found.by_app[node.index].items()},
                }
                for node in self.nodes
            ],
            "pairs": found.pairs,
            "pairs_not_listed": found.pair_count - len(found.pairs),
            "kept": list(self.kept),
            "moved": list(self.moved),
            **self._cross_node_report(),
            **self._time_sharing_report(),
            "warning": self.warning(),
            "left_out": left_out(self.apps, self.nodes, self.assignment),
        }

    def _time_sharing_report(self) -> dict[str, Any]:
        """The report's `time_sharing` key, present only when some app declares a CPU demand (timesharing.py)."""
        if not timesharing.active(self.apps):
            return {}
        predicted = timesharing.slowdowns(self.apps, self.nodes, self.assignment, self.sharing)
        return {
            "time_sharing": {
                "score": round(sum(value - 1 for per_app in predicted for value in per_app), 6),
                "predicted_slowdown": {
                    app.name: round(max(values), 6) for app, values in zip(self.apps, predicted, strict=True) if values
                },
                "oversubscribed": [
                    {"node": entry.name, "demand": entry.demand_cores, "cpus": entry.cpus, "factor": entry.factor}
                    for entry in timesharing.oversubscribed(self.apps, self.nodes, self.assignment)
                ],
            }
        }

    def _cross_node_report(self) -> dict[str, Any]:
        """The report's cross-node keys, present only when the plan was made with sharing."""
        if not self.sharing.shared_dims:
            return {}
        cross = self.cross_node
        return {
            "sharing": {
                "label": self.sharing.label,
                "pressures": {dim: self.sharing.shares[dim_index] for dim_index, dim in enumerate(PRESSURE_DIMENSIONS)
                              if self.sharing.shares[dim_index] > EPSILON},
            },
            "cross_node_interference": round(cross["total"], 6),
            "cross_node_pairs": cross["pairs"],
            "cross_node_pairs_not_listed": cross["pairs_not_listed"],
        }


def left_out(apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]]) -> list[dict[str, str]]:
    """The nodes that got no replica for a reason of their own, each {node, reason}, in node order.

    NotReady; tainted (NoSchedule or NoExecute) with no app tolerating the
    taint; or full: what other pods leave free of its pods, cpu or memory is
    less than the smallest request of any app. A node that is simply not
    needed is not listed. Linear in apps and nodes.
    """
    used = {node_index for replicas in assignment for node_index in replicas}
    toleration_sets = {app.tolerations for app in apps}
    smallest_cpu = min((app.cpu_millicores for app in apps), default=0)
    smallest_memory = min((app.memory_bytes for app in apps), default=0)
    found = []
    for node in nodes:
        if node.index in used:
            continue
        reason = None
        untolerated_taints = [untolerated(tolerations, node.taints) for tolerations in toleration_sets or {()}]
        if not node.ready:
            reason = "NotReady"
        elif node.taints and all(taint is not None for taint in untolerated_taints):
            key, value, effect = next(taint for taint in untolerated_taints if taint is not None)
            reason = f"tainted {key}{'=' + value if value else ''}:{effect}, which no app tolerates"
        elif node.pods is not None and node.pods < 1:
            reason = "full: other pods take all its pods"
        elif node.cpu_millicores is not None and node.cpu_millicores < smallest_cpu:
            reason = f"full: {node.cpu_millicores}m cpu free, the smallest app requests {smallest_cpu}m"
        elif node.memory_bytes is not None and node.memory_bytes < smallest_memory:
            reason = f"full: {node.memory_bytes:,} bytes of memory free, the smallest app requests {smallest_memory:,}"
        if reason is not None:
            found.append({"node": node.name, "reason": reason})
    return found


@dataclass
class Collisions:
    """Where a plan's interference is, in time linear in the pods (scores).

    A node's interference is (|S|^2 - sum of the replicas' |p|^2) / 2 for S the
    sum of the profiles there, and the pairs an app with c replicas forms there
    score c p.S - c(c+1)/2 |p|^2 in all: neither needs the pairs themselves.
    Pairs are counted per node by the set of resources each app presses on (2^5
    sets at most), and only the PAIRS_LISTED worst are listed: on each node,
    apps are grouped by profile, heaviest first, and pairs of groups whose bound
    cannot beat the pairs already listed are never looked at. Quadratic only in
    the distinct profiles of one node, and those are capped at
    PAIR_LISTING_MAX_PROFILES (the heaviest; lighter ones cannot be the worst
    pairs unless profiles are nearly orthogonal, and their pairs are still
    counted).
    """

    pairs: list[dict[str, Any]]
    pair_count: int
    by_node: list[float]
    by_app: list[dict[str, float]]


def find_collisions(apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]]) -> Collisions:
    """Collisions of an assignment (app index -> node index per replica)."""
    residents: list[dict[int, int]] = [{} for _ in nodes]
    for app_index, replicas in enumerate(assignment):
        for node_index in replicas:
            counts = residents[node_index]
            counts[app_index] = counts.get(app_index, 0) + 1
    listed: list[tuple[float, tuple[int, int, int]]] = []  # min-heap: the worst kept pair on top
    by_node = [0.0] * len(nodes)
    by_app: list[dict[str, float]] = [{} for _ in nodes]
    pair_count = 0
    for node_index, counts in enumerate(residents):
        if not counts:
            continue
        width = len(apps[0].profile)
        load = [0.0] * width
        own = 0.0
        for app_index, count in counts.items():
            profile = apps[app_index].profile
            for dim, value in sparse(profile):
                load[dim] += count * value
            own += count * dot(profile, profile)
        by_node[node_index] = max(0.0, (dot(load, load) - own) / 2)
        for app_index, count in counts.items():
            profile = apps[app_index].profile
            score = count * dot(profile, load) - count * (count + 1) / 2 * dot(profile, profile)
            by_app[node_index][apps[app_index].name] = max(0.0, score)
        pair_count += _count_pairs(apps, counts)
        _list_worst_pairs(apps, node_index, counts, listed)
    pairs = []
    for score, (node_index, left, right) in sorted(listed, key=lambda entry: (-entry[0], entry[1])):
        pairs.append(
            {
                "node": nodes[node_index].name,
                "apps": [apps[left].name, apps[right].name],
                "score": round(score, 6),
                "reason": pair_reason(apps[left].profile, apps[right].profile)
                if left != right
                else "replicas of one app share the node",
            }
        )
    return Collisions(pairs=pairs, pair_count=pair_count, by_node=by_node, by_app=by_app)


def _count_pairs(apps: Sequence[App], counts: Mapping[int, int]) -> int:
    """Interfering pairs of apps on one node (an app with several replicas there pairs with itself).

    Two apps interfere when they press on a common resource, so counting by
    the set of resources each presses on (a bit mask) is enough.
    """
    apps_of: dict[int, int] = {}
    with_copies: dict[int, int] = {}
    for app_index, count in counts.items():
        mask = sum(1 << dim for dim, _ in sparse(apps[app_index].profile))
        if mask:
            apps_of[mask] = apps_of.get(mask, 0) + 1
            with_copies[mask] = with_copies.get(mask, 0) + (count > 1)
    masks = sorted(apps_of)
    total = sum(apps_of[m] * (apps_of[m] - 1) // 2 + with_copies[m] for m in masks)
    for position, left in enumerate(masks):
        for right in masks[position + 1:]:
            if left & right:
                total += apps_of[left] * apps_of[right]
    return total


def _list_worst_pairs(
    apps: Sequence[App], node_index: int, counts: Mapping[int, int], listed: list[tuple[float, tuple[int, int, int]]]
) -> None:
    """Offer the node's worst pairs to `listed`, a min-heap of at most PAIRS_LISTED (score, (node, left, right))."""
    groups: dict[Profile, list[tuple[int, int]]] = {}
    for app_index, count in counts.items():
        groups.setdefault(apps[app_index].profile, []).append((count, app_index))
    # Heaviest first: a pair of groups scores at most the product of their weights (Cauchy-Schwarz).
    weighted = []
    for profile, members in groups.items():
        members.sort(key=lambda member: (-member[0], member[1]))
        weighted.append((members[0][0] * math.sqrt(dot(profile, profile)), profile, members))
    weighted.sort(key=lambda entry: (-entry[0], entry[2][0][1]))
    del weighted[PAIR_LISTING_MAX_PROFILES:]

    def beaten(score: float) -> bool:
        return len(listed) >= PAIRS_LISTED and score <= listed[0][0]

    def offer(score: float, left: int, right: int) -> None:
        entry = (score, (node_index, min(left, right), max(left, right)))
        if len(listed) < PAIRS_LISTED:
            heapq.heappush(listed, entry)
        elif score > listed[0][0]:
            heapq.heapreplace(listed, entry)

    for first, (weight, profile, members) in enumerate(weighted):
        if beaten(weight * weight):
            break
        for other_weight, other_profile, others in weighted[first:]:
            if beaten(weight * other_weight):
                break
            shared = dot(profile, other_profile)
            if shared <= 0:
                continue
            same = other_profile is profile
            # Rows and columns by count, largest first: once a row's best pair is beaten, so are the later rows'.
            for position, (count, app_index) in enumerate(members):
                start = position + 1 if same else 0
                if start >= len(others) or beaten(count * others[start][0] * shared):
                    break
                for column in range(start, len(others)):
                    other_count, other_index = others[column]
                    score = count * other_count * shared
                    if beaten(score):
                        break
                    offer(score, app_index, other_index)
            if same:
                for count, app_index in members:
                    score = count * (count - 1) / 2 * shared
                    if count < 2 or beaten(score):
                        break
                    offer(score, app_index, app_index)


def _previous_nodes(previous: object, apps: list[App], nodes: list[Node]) -> dict[int, list[int]]:
    """Validate `previous` ({app: [node, ...]}) and map it to node indices per app index."""
    if previous is None:
        return {}
    if not isinstance(previous, Mapping):
        raise AppInputError(
            None, None, "previous", f"must be a mapping of app name to the list of its nodes, {got(previous)}"
        )
    by_name = {app.name: app for app in apps}
    node_index = {node.name: node.index for node in nodes}
    result: dict[int, list[int]] = {}
    for name, names in previous.items():
        app = by_name.get(name)
        if app is None:
            continue  # an app that left the list: the caller prunes it
        node_names = [names] if isinstance(names, str) else names
        if not isinstance(node_names, Sequence) or not all(isinstance(n, str) for n in node_names):
            raise AppInputError(app.index, app.name, "previous", f"must be a list of node names, {got(names)}")
        unknown = [n for n in node_names if n not in node_index]
        if unknown:
            raise AppInputError(
                app.index, app.name, "previous",
                f"unknown node {shown(unknown[0])}: not in the node list ({', '.join(sorted(node_index)[:10])})",
            )
        result[app.index] = [node_index[n] for n in node_names]
    return result


def _check_pins(apps: list[App], nodes: list[Node]) -> None:
    names = {node.name for node in nodes}
    for app in apps:
        if app.pinned_node is not None and app.pinned_node not in names:
            raise AppInputError(
                app.index, app.name, "node", f"unknown node {shown(app.pinned_node)}: not in the node list"
            )


def _placement_order(engine: _Engine, app: App) -> tuple[Any, ...]:
    """Most constrained first: pinned, fewest eligible nodes, GPUs, biggest requests, strongest profile."""
    return (
        app.pinned_node is None,
        len(engine.eligible[app.index]),
        -app.gpus,
        -app.cpu_millicores,
        -app.memory_bytes,
        -dot(app.profile, app.profile),
        app.index,
    )


def check_search_effort(search_effort: object) -> float:
    """Validate `search_effort` (a number from 0 to 100) and return it as a float."""
    if isinstance(search_effort, bool) or not isinstance(search_effort, (int, float)) or not 0 <= search_effort <= 100:
        raise InputError(None, None, "search_effort", f"must be a number from 0 to 100, {got(search_effort)}")
    return float(search_effort)


def check_max_moves(max_moves: object) -> int | None:
    """Validate `max_moves` (None, or a whole number from 0 to rebalance.MAX_MOVES)."""
    if max_moves is None:
        return None
    if isinstance(max_moves, bool) or not isinstance(max_moves, int) or not 0 <= max_moves <= MAX_MOVES:
        raise InputError(None, None, "max_moves", f"must be a whole number from 0 to {MAX_MOVES:,}, {got(max_moves)}")
    return max_moves


def check_movable(
    move_from: object, hold: object, apps: list[App], nodes: list[Node],
) -> tuple[set[str] | None, set[str]]:
    """Validate `move_from` (None, or node names) and `hold` (None, or app names): (nodes or None, held apps)."""
    def names(value: object, field: str, known: set[str], what: str) -> set[str]:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise InputError(None, None, field, f"must be a list of {what} names, {got(value)}")
        unknown = sorted(set(value) - known)
        if unknown:
            raise InputError(None, None, field, f"names no {what} of this placement: {', '.join(unknown)}")
        return set(value)

    nodes_from = None if move_from is None else names(move_from, "move_from", {n.name for n in nodes}, "node")
    held = set() if hold is None else names(hold, "hold", {a.name for a in apps}, "app")
    return nodes_from, held


def plan_placement(
    apps: list[App], nodes: list[Node], previous: object = None, rebalance: bool = False,
    search_effort: float = 1.0, *, sharing: Sharing = NO_SHARING, max_moves: object = None,
    move_from: object = None, hold: object = None,
) -> Plan:
    """Compute the placement of validated apps on validated nodes (see module doc).

    `search_effort` scales the annealing budget (0 turns it off; 1 is the
    default; 10 searches ten times as long). `sharing` (sharing.py) makes
    pairs on different nodes of one group count too. With `rebalance` and
    `max_moves`, the running replicas stay and at most `max_moves` of them
    move, each by the best move left (rebalance.py): only replicas running on
    a node of `move_from` (all when None), and never those of an app named in
    `hold`; with `rebalance` alone everything is placed anew.
    """
    search_effort = check_search_effort(search_effort)
    limit = check_max_moves(max_moves)
    nodes_from, held = check_movable(move_from, hold, apps, nodes)
    _check_pins(apps, nodes)
    bounded = rebalance and limit is not None
    previous_nodes = {} if rebalance and not bounded else _previous_nodes(previous, apps, nodes)
    engine = _Engine(apps, nodes, sharing)
    state = engine.state
    assignment: list[list[int]] = [[] for _ in apps]
    kept: list[str] = []
    moved: list[dict[str, Any]] = []
    apps_by_name = {app.name: app.index for app in apps}

    for app in apps:
        for node_index in previous_nodes.get(app.index, [])[: app.replicas]:
            reason = state.reason(app.index, node_index)
            if reason is None:
                state.add(app, node_index)
                assignment[app.index].append(node_index)
            else:
                moved.append({"app": app.name, "from": nodes[node_index].name, "reason": reason})
        if assignment[app.index]:
            kept.append(app.name)
    fixed = [list(replicas) for replicas in assignment]
    engine.build_classes()

    free: list[int] = []
    for app in sorted(apps, key=lambda a: _placement_order(engine, a)):
        free.extend([app.index] * (app.replicas - len(assignment[app.index])))

    all_profiles = [engine.vectors[app.index] for app in apps for _ in range(app.replicas)]
    lower_bound = interference_lower_bound(all_profiles, len(nodes), len(set(state.group)))

    failure = engine.greedy(free, assignment)
    method = "greedy"
    proven = failure is None and state.interference <= lower_bound + EPSILON
    if failure is None and not proven:
        movable = [
            (app_index, position)
            for app_index, replicas in enumerate(assignment)
            for position in range(len(fixed[app_index]), len(replicas))
        ]
        engine.local_search(movable, assignment)
        method = "greedy+local-search"
        proven = state.interference <= lower_bound + EPSILON
        moves = anneal_budget(len(movable), search_effort, state.interference, lower_bound)
        if not proven and moves and len(free) > EXACT_SEARCH_MAX_REPLICAS:  # else the exact search follows
            engine.anneal(movable, assignment, moves, ANNEAL_SEED)
            method = "greedy+local-search+annealing"
            proven = state.interference <= lower_bound + EPSILON
    if not proven and len(free) <= EXACT_SEARCH_MAX_REPLICAS:
        # Take the heuristic plan off (keeping fixed replicas), search, then
        # put back whichever plan wins.
        for app_index, replicas in enumerate(assignment):
            for node_index in replicas[len(fixed[app_index]):]:
                state.remove(apps[app_index], node_index)
        incumbent = sum_interference(apps, assignment, sharing, nodes) if failure is None else math.inf
        finished, choice = engine.exact(free, incumbent)
        if choice is not None:
            assignment = [list(replicas) for replicas in fixed]
            for app_index, node_index in zip(free, choice, strict=True):
                assignment[app_index].append(node_index)
            failure = None
        if failure is None:
            for app_index, replicas in enumerate(assignment):
                for node_index in replicas[len(fixed[app_index]):]:
                    state.add(apps[app_index], node_index)
            if finished:
                method, proven = "exact", True
    if failure is not None:
        raise failure
    if bounded and limit:
        running = [(app_index, position) for app_index, replicas in enumerate(fixed)
                   for position, node_index in enumerate(replicas)
                   if apps[app_index].name not in held and (nodes_from is None or nodes[node_index].name in nodes_from)]
        for move in bounded_moves(state, apps, assignment, running, limit):
            moved.append({"app": move["app"], "from": move["from"],
                          "reason": f"rebalance: to {move['to']}, interference -{move['gain']:g}"})
    time_shared = timesharing.active(apps)
    if time_shared:
        movable = [
            (app_index, position)
            for app_index, replicas in enumerate(assignment)
            for position in range(len(fixed[app_index]), len(replicas))
        ]
        shared_score = timesharing.improve(state, assignment, movable, apps=apps, nodes=nodes, sharing=sharing)
        method += "+time-sharing"
        # The pair score's bound says nothing of the time-shared score; only a plan that slows nobody is proven.
        proven = shared_score <= EPSILON

    for app_index, replicas in enumerate(assignment):
        replicas[len(fixed[app_index]):] = sorted(replicas[len(fixed[app_index]):])
    for entry in moved:
        entry["to"] = [nodes[n].name for n in assignment[apps_by_name[entry["app"]]]]
    total = sum_interference(apps, assignment, sharing, nodes)
    return Plan(
        apps=apps,
        nodes=nodes,
        assignment=assignment,
        total_interference=total,
        lower_bound=lower_bound,
        proven_optimal=proven or (total <= lower_bound + EPSILON and not time_shared),
        method=method,
        kept=kept,
        moved=moved,
        sharing=sharing,
    )


def place(
    apps: object, nodes: object, previous: object = None, rebalance: object = False, strict: object = False, *,
    search_effort: object = 1.0, sharing: object = None, max_moves: object = None, move_from: object = None,
    hold: object = None,
) -> Plan:
    """Validate raw apps and nodes (plain data) and compute their placement.

    `search_effort` (0 to 100, default 1) trades time for plan quality: it
    multiplies the annealing's move budget (see plan_placement). `sharing`
    ({label, pressures}, sharing.py) says which nodes share what. `max_moves`
    (with `rebalance`): move at most that many running replicas (rebalance.py),
    only from the nodes named in `move_from` and never those of the apps in `hold`.

    Raises AppInputError / NodeInputError on bad input, UnschedulableError when
    an app fits no node, and InterferenceError in strict mode when the plan
    still has interference.
    """
    app_list = parse_apps(apps)
    node_list = parse_nodes(nodes)
    effort = check_search_effort(search_effort)
    plan = plan_placement(
        app_list, node_list, previous=previous, rebalance=parse_flag(rebalance, "rebalance"), search_effort=effort,
        sharing=parse_sharing(sharing), max_moves=max_moves, move_from=move_from, hold=hold,
    )
    if parse_flag(strict, "strict"):
        warning = plan.warning()
        if warning:
            raise InterferenceError(f"strict placement: {warning}")
    return plan


def placed_apps(items: Sequence[Mapping[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """The input app items, same order, each with `nodes`: one node name per replica."""
    return [dict(item, nodes=plan.node_names(index)) for index, item in enumerate(items)]

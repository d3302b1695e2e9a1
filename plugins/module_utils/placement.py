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
   movable replicas, 100 to 1,000 per replica) times `search_effort`; with a
   fixed seed, the same input gives the same plan on any machine. Measured
   against a plain descent over the same moves and against relocations only,
   it was as good or slightly better (benchmarks/placement.py figures in the
   README).
5. Exact search: when the plan is not proven optimal and the instance is
   small (up to 16 replicas to place: the annealing is skipped there), a
   depth-first branch and bound (with symmetry breaking over identical empty
   nodes) finds the true optimum within a fixed budget of search nodes.

The report gives the method that ran (greedy, greedy+local-search,
greedy+local-search+annealing, exact), the lower bound and the gap to it.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import AppInputError, InputError, InterferenceError, UnschedulableError
from .interference import EPSILON, Profile, dot, interference_lower_bound, pair_reason
from .model import App, Node, parse_apps, parse_flag, parse_nodes
from .schema import got, shown

# Exact search runs only when the plan is not proven optimal and it has at
# most this many replicas to place; it stops after EXACT_SEARCH_BUDGET search
# nodes and keeps the best plan found (still flagged as not proven).
EXACT_SEARCH_MAX_REPLICAS = 16
EXACT_SEARCH_BUDGET = 200_000
LOCAL_SEARCH_MAX_PASSES = 50

# Annealing budget, in proposed moves, for search_effort 1: ANNEAL_MOVES
# spread over the movable replicas, but at least ANNEAL_MIN_PER_REPLICA and at
# most ANNEAL_MAX_PER_REPLICA moves per replica (small instances get searched
# thoroughly, 10,000 replicas still finish in seconds).
ANNEAL_MOVES = 200_000
ANNEAL_MIN_PER_REPLICA = 100
ANNEAL_MAX_PER_REPLICA = 1000
# Temperatures, as multiples of the mean self-weight |p|^2 of the movable
# replicas (the score one more identical neighbour costs): a move that adds
# that much is taken half the time at the start and almost never at the end.
ANNEAL_START_TEMPERATURE = 1.5
ANNEAL_END_TEMPERATURE = 0.02
ANNEAL_COOLING_STEP = 1000
# Share of proposals that swap with a resident of the target node even when a
# plain relocation would fit (a relocation that does not fit always tries one).
ANNEAL_SWAP_SHARE = 0.2
ANNEAL_SEED = 13
# The annealing is skipped when the local-search plan is within this fraction
# of the lower bound (divided by search_effort): it could gain at most that.
ANNEAL_SKIP_GAP = 0.01
# ...but not for up to this many movable replicas: there it costs
# milliseconds, and that last 1% is what a lucky random valid placement beat
# the local optimum by (test_never_worse_than_random_placement: 26.6875
# against 26.75, bound 26.55, 30 replicas on 2 nodes; annealed: 26.6875).
ANNEAL_ALWAYS_UP_TO = 200
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

    def node_names(self, app_index: int) -> list[str]:
        """Node name of each replica of one app, in replica order."""
        return [self.nodes[n].name for n in self.assignment[app_index]]

    @functools.cached_property
    def collisions(self) -> Collisions:
        """Who interferes with whom, computed once per plan in time linear in the pods (see Collisions)."""
        return find_collisions(self.apps, self.nodes, self.assignment)

    def interfering_pairs(self) -> list[dict[str, Any]]:
        """The PAIRS_LISTED worst pairs of apps sharing a node, worst first (collisions().pair_count counts all)."""
        return self.collisions.pairs

    def warning(self) -> str | None:
        """A sentence naming the colliding apps, or None for an interference-free plan."""
        if self.total_interference <= EPSILON:
            return None
        found = self.collisions
        shown = "; ".join(
            f"{p['apps'][0]} and {p['apps'][1]} share {p['node']} ({p['reason']})"
            for p in found.pairs[:PAIRS_IN_WARNING]
        )
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
            "warning": self.warning(),
        }


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


@functools.lru_cache(maxsize=4096)
def sparse(profile: Profile) -> tuple[tuple[int, float], ...]:
    """The non-zero entries of a profile as (dimension, pressure): most apps press on one resource."""
    return tuple((dim, value) for dim, value in enumerate(profile) if value)


class _State:
    """Mutable per-node usage while a plan is built."""

    def __init__(self, apps: list[App], nodes: list[Node]) -> None:
        self.apps = apps
        self.nodes = nodes
        width = len(apps[0].profile) if apps else 0
        self.load: list[list[float]] = [[0.0] * width for _ in nodes]
        self.cpu = [0] * len(nodes)
        self.memory = [0] * len(nodes)
        self.pods = [0] * len(nodes)
        self.gpus = [0] * len(nodes)
        self.app_count: list[dict[int, int]] = [{} for _ in nodes]
        self.version = [0] * len(nodes)
        self.interference = 0.0
        self.max_per_node = [1] * len(apps)

    def marginal(self, profile: Profile, node_index: int) -> float:
        """Interference one more replica with `profile` adds on the node (score)."""
        load = self.load[node_index]
        entries = sparse(profile)
        if len(entries) == 1:  # the common one-hot case, without a generator
            dim, value = entries[0]
            return value * load[dim]
        return sum(value * load[dim] for dim, value in entries)

    def balance(self, node_index: int) -> float:
        """Requested share of the node's cpu plus memory (0..2), for tie-breaks."""
        node = self.nodes[node_index]
        share = 0.0
        if node.cpu_millicores:
            share += self.cpu[node_index] / node.cpu_millicores
        if node.memory_bytes:
            share += self.memory[node_index] / node.memory_bytes
        return round(share, 9)

    def full(self, node_index: int) -> bool:
        """True when no pod at all can be added to the node any more."""
        pods = self.nodes[node_index].pods
        return pods is not None and self.pods[node_index] >= pods

    def reject_reason(self, app: App, node_index: int) -> str | None:
        """Why one more replica of `app` cannot go to the node now, or None if it can."""
        node = self.nodes[node_index]
        reason = static_reject_reason(app, node)
        if reason:
            return reason
        if node.pods is not None and self.pods[node_index] + 1 > node.pods:
            return "too many pods"
        if node.cpu_millicores is not None and self.cpu[node_index] + app.cpu_millicores > node.cpu_millicores:
            return "insufficient cpu"
        if node.memory_bytes is not None and self.memory[node_index] + app.memory_bytes > node.memory_bytes:
            return "insufficient memory"
        if app.gpus and self.gpus[node_index] + app.gpus > node.gpus:
            return "insufficient nvidia.com/gpu"
        if self.app_count[node_index].get(app.index, 0) >= self.max_per_node[app.index]:
            return f"already runs {self.max_per_node[app.index]} replica(s) of {app.name} (spread)"
        return None

    def add(self, app: App, node_index: int) -> None:
        self.interference += self.marginal(app.profile, node_index)
        load = self.load[node_index]
        for dim, value in sparse(app.profile):
            load[dim] += value
        self._account(app, node_index, 1)

    def remove(self, app: App, node_index: int) -> None:
        load = self.load[node_index]
        for dim, value in sparse(app.profile):
            load[dim] -= value
        self.interference -= self.marginal(app.profile, node_index)
        self._account(app, node_index, -1)

    def _account(self, app: App, node_index: int, sign: int) -> None:
        self.cpu[node_index] += sign * app.cpu_millicores
        self.memory[node_index] += sign * app.memory_bytes
        self.pods[node_index] += sign
        self.gpus[node_index] += sign * app.gpus
        counts = self.app_count[node_index]
        counts[app.index] = counts.get(app.index, 0) + sign
        if not counts[app.index]:
            del counts[app.index]
        self.version[node_index] += 1


def static_reject_reason(app: App, node: Node) -> str | None:
    """Why the node can never take a replica of `app` (labels, pin, size), or None."""
    if app.pinned_node is not None and app.pinned_node != node.name:
        return f"not the pinned node {app.pinned_node}"
    for key, value in app.node_selector:
        if node.labels.get(key) != value:
            return f"missing label {key}={value}"
    if app.gpus and node.gpus < app.gpus:
        return "insufficient nvidia.com/gpu"
    if node.pods is not None and node.pods < 1:
        return "too many pods"
    if node.cpu_millicores is not None and app.cpu_millicores > node.cpu_millicores:
        return "insufficient cpu"
    if node.memory_bytes is not None and app.memory_bytes > node.memory_bytes:
        return "insufficient memory"
    return None


def unschedulable_message(app: App, reasons: Sequence[str | None]) -> str:
    """kube-scheduler style: '0/3 nodes fit web: 1 insufficient cpu, 2 missing label disk=ssd'."""
    counts: dict[str, int] = {}
    for reason in reasons:
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
    detail = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"0/{len(reasons)} nodes fit {app.name}: {detail}"


class _NodeClass:
    """Nodes eligible for a group of apps with one profile, in a heap by marginal cost.

    Keys are refreshed lazily: adding a replica to a node can only raise its key
    (profiles are non-negative, and load and pod count grow), so an outdated
    entry is re-filed when it reaches the top instead of on every change. Only
    a removal, which can lower a key, pushes a new entry at once.

    A node that turns a replica down for lack of cpu (or memory) is parked
    aside, keyed by what it had free, instead of going back into the heap:
    when capacity binds, cheap nodes that are full for big requests would
    otherwise be popped and pushed back on every query (O(nodes) each). It
    comes back once a replica with a request no larger than that asks; a
    removal files the node anew at once, which supersedes the parked entry.
    """

    def __init__(self, profile: Profile, eligible: list[int], state: _State) -> None:
        self.profile = profile
        self.eligible = eligible
        self.latest: dict[int, int] = {}  # node index -> version of its newest entry
        # (-free millicores or bytes when parked, node index, version of the entry)
        self.parked_cpu: list[tuple[int, int, int]] = []
        self.parked_memory: list[tuple[int, int, int]] = []
        self.heap = [self.entry(state, n) for n in eligible]
        heapq.heapify(self.heap)

    def entry(self, state: _State, node_index: int) -> tuple[float, float, int, int, int]:
        version = state.version[node_index]
        self.latest[node_index] = version
        return (
            round(state.marginal(self.profile, node_index), 9),
            state.balance(node_index),
            state.pods[node_index],
            node_index,
            version,
        )

    def push(self, state: _State, node_index: int) -> None:
        """File the node again after its key may have dropped (a replica left it)."""
        heapq.heappush(self.heap, self.entry(state, node_index))
        if len(self.heap) > 4 * len(self.eligible) + 64:
            self.heap = [e for e in self.heap if e[4] == self.latest[e[3]]]
            heapq.heapify(self.heap)

    def best(self, state: _State, app: App, exclude: int = -1, below: float = math.inf) -> int | None:
        """Cheapest node that can take one more replica of `app` now (not `exclude`).

        With `below`, only nodes whose marginal cost is under it are of interest:
        the search stops at the first entry at or above it (an entry's key never
        overstates the node's current key, so nothing cheaper is left behind).
        """
        heap = self.heap
        for parked, request in ((self.parked_cpu, app.cpu_millicores), (self.parked_memory, app.memory_bytes)):
            while parked and -parked[0][0] >= request:
                _, node_index, version = heapq.heappop(parked)
                if version == self.latest[node_index]:  # else a removal filed the node anew
                    heapq.heappush(heap, self.entry(state, node_index))
        aside = []
        chosen = None
        while heap and heap[0][0] < below:
            entry = heapq.heappop(heap)
            node_index, version = entry[3], entry[4]
            if version != self.latest[node_index]:
                continue  # superseded by a newer entry for the same node
            if version != state.version[node_index]:
                heapq.heappush(heap, self.entry(state, node_index))  # only grew since: re-file
                continue
            reason = None if node_index == exclude else state.reject_reason(app, node_index)
            if node_index != exclude and reason is None:
                chosen = entry
                break
            node = state.nodes[node_index]
            if reason == "insufficient cpu" and node.cpu_millicores is not None:
                heapq.heappush(self.parked_cpu, (state.cpu[node_index] - node.cpu_millicores, node_index, version))
            elif reason == "insufficient memory" and node.memory_bytes is not None:
                heapq.heappush(self.parked_memory, (state.memory[node_index] - node.memory_bytes, node_index, version))
            elif not state.full(node_index):
                aside.append(entry)
            # A full node drops out until a replica leaves it (remove() files it again).
        for entry in aside:
            heapq.heappush(heap, entry)
        if chosen is None:
            return None
        heapq.heappush(heap, chosen)
        return chosen[3]


class _Engine:
    def __init__(self, apps: list[App], nodes: list[Node]) -> None:
        self.apps = apps
        self.nodes = nodes
        self.state = _State(apps, nodes)
        self.eligible: list[list[int]] = []
        self.classes: list[_NodeClass] = []
        self.class_of_app: list[int] = []
        self.classes_of_node: list[list[int]] = [[] for _ in nodes]
        self._eligibility_cache: dict[tuple[Any, ...], list[int]] = {}
        self._placeable_cache: dict[tuple[Any, ...], tuple[list[int], float, float]] = {}
        self._interned: dict[tuple[int, ...], list[int]] = {}
        for app in apps:
            self.eligible.append(self._eligible_nodes(app))
            self.state.max_per_node[app.index] = max(1, math.ceil(app.replicas / max(1, len(self.eligible[-1]))))

    def _eligible_nodes(self, app: App) -> list[int]:
        """The nodes that can ever take a replica of `app`, one shared list per distinct answer.

        The pin, labels and GPUs are checked once per distinct combination;
        requests are then checked only when some of those nodes are smaller
        than the request, so apps that differ only in requests that fit every
        node cost nothing per node.
        """
        key = (app.pinned_node, app.node_selector, app.gpus, app.cpu_millicores, app.memory_bytes)
        cached = self._eligibility_cache.get(key)
        if cached is None:
            placeable, smallest_cpu, smallest_memory = self._placeable(app)
            if app.cpu_millicores <= smallest_cpu and app.memory_bytes <= smallest_memory:
                cached = placeable
            else:
                nodes = tuple(n for n in placeable if static_reject_reason(app, self.nodes[n]) is None)
                cached = self._interned.setdefault(nodes, list(nodes))
            self._eligibility_cache[key] = cached
        return cached

    def _placeable(self, app: App) -> tuple[list[int], float, float]:
        """Nodes matching the app's pin, labels and GPUs, with their smallest cpu and memory (inf: unbounded)."""
        key = (app.pinned_node, app.node_selector, app.gpus)
        cached = self._placeable_cache.get(key)
        if cached is None:
            unsized = replace(app, cpu_millicores=0, memory_bytes=0)
            nodes = tuple(node.index for node in self.nodes if static_reject_reason(unsized, node) is None)
            cpu = [self.nodes[n].cpu_millicores for n in nodes]
            memory = [self.nodes[n].memory_bytes for n in nodes]
            cached = (
                self._interned.setdefault(nodes, list(nodes)),
                min((c for c in cpu if c is not None), default=math.inf),
                min((m for m in memory if m is not None), default=math.inf),
            )
            self._placeable_cache[key] = cached
        return cached

    def build_classes(self) -> None:
        by_key: dict[tuple[Any, ...], int] = {}
        for app in self.apps:
            key = (app.profile, id(self.eligible[app.index]))
            if key not in by_key:
                by_key[key] = len(self.classes)
                node_class = _NodeClass(app.profile, self.eligible[app.index], self.state)
                self.classes.append(node_class)
                for node_index in node_class.eligible:
                    self.classes_of_node[node_index].append(by_key[key])
            self.class_of_app.append(by_key[key])

    def add(self, app: App, node_index: int) -> None:
        self.state.add(app, node_index)

    def remove(self, app: App, node_index: int) -> None:
        self.state.remove(app, node_index)
        for class_index in self.classes_of_node[node_index]:
            self.classes[class_index].push(self.state, node_index)

    def greedy(self, replicas: list[int], assignment: list[list[int]]) -> UnschedulableError | None:
        """Place each replica (by app index) on its cheapest feasible node."""
        for app_index in replicas:
            app = self.apps[app_index]
            node_index = self.classes[self.class_of_app[app_index]].best(self.state, app)
            if node_index is None:
                reasons = [self.state.reject_reason(app, n) for n in range(len(self.nodes))]
                return UnschedulableError(app.name, unschedulable_message(app, reasons))
            self.add(app, node_index)
            assignment[app_index].append(node_index)
        return None

    def local_search(self, movable: list[tuple[int, int]], assignment: list[list[int]]) -> None:
        """Move single replicas while that strictly lowers total interference.

        `movable` lists (app index, replica position) pairs that may move. A
        move is priced before it is made (leaving saves p.(S_n - p), arriving
        costs p.S_m), so replicas that stay cost one heap peek, not two updates.
        """
        state = self.state
        self_weight = [dot(app.profile, app.profile) for app in self.apps]
        for _ in range(LOCAL_SEARCH_MAX_PASSES):
            improved = False
            for app_index, position in movable:
                app = self.apps[app_index]
                current = assignment[app_index][position]
                staying = state.marginal(app.profile, current) - self_weight[app_index]
                target = self.classes[self.class_of_app[app_index]].best(
                    state, app, exclude=current, below=round(staying - EPSILON, 9)
                )
                if target is not None and state.marginal(app.profile, target) < staying - EPSILON:
                    self.remove(app, current)
                    self.add(app, target)
                    assignment[app_index][position] = target
                    improved = True
            if not improved:
                return

    def anneal(self, movable: list[tuple[int, int]], assignment: list[list[int]], moves: int, seed: int) -> int:
        """Simulated annealing over relocations and swaps of the `movable` replicas, from the current plan.

        `moves` is the number of proposed moves (the budget: counted, never
        timed, so the same input gives the same plan on any machine); `seed`
        seeds the move choice. Every proposal is checked against every hard
        constraint before it is priced, so the plan is feasible at every step.
        Worse plans are accepted with probability exp(-delta / T) while the
        temperature T cools geometrically; plans of equal score always are,
        which lets a full node trade a big request for small ones at no cost
        (what single moves cannot do once capacity binds). The best plan seen
        is restored at the end (an undo log of the moves since it). Updates
        `assignment` and the state in place; returns the moves accepted.
        """
        state = self.state
        apps = self.apps
        count = len(movable)
        if count == 0 or moves <= 0 or len(self.nodes) < 2:
            return 0
        # Plain arrays and locals: this loop is the engine's hot path.
        profile_ids: dict[Profile, int] = {}
        app_profile = [profile_ids.setdefault(app.profile, len(profile_ids)) for app in apps]
        profiles = list(profile_ids)
        entries = [sparse(p) for p in profiles]
        self_weight = [dot(p, p) for p in profiles]
        cross = [[dot(p, q) for q in profiles] for p in profiles]
        big = 1 << 62
        cap_cpu = [big if n.cpu_millicores is None else n.cpu_millicores for n in self.nodes]
        cap_memory = [big if n.memory_bytes is None else n.memory_bytes for n in self.nodes]
        cap_pods = [big if n.pods is None else n.pods for n in self.nodes]
        cap_gpus = [n.gpus for n in self.nodes]
        req_cpu = [app.cpu_millicores for app in apps]
        req_memory = [app.memory_bytes for app in apps]
        req_gpus = [app.gpus for app in apps]
        node_count = len(self.nodes)
        eligible = self.eligible
        # Membership test for swaps: None where every node is eligible.
        eligible_sets: dict[int, set[int] | None] = {}
        for nodes_of_app in eligible:
            if id(nodes_of_app) not in eligible_sets:
                eligible_sets[id(nodes_of_app)] = None if len(nodes_of_app) == node_count else set(nodes_of_app)
        eligible_set = [eligible_sets[id(nodes_of_app)] for nodes_of_app in eligible]
        max_per_node = state.max_per_node
        load, cpu, memory, pods, gpus, app_count = (
            state.load, state.cpu, state.memory, state.pods, state.gpus, state.app_count
        )
        replica_app = [app_index for app_index, _ in movable]
        node_of = [assignment[app_index][position] for app_index, position in movable]
        members: list[list[int]] = [[] for _ in self.nodes]
        slot = [0] * count
        for replica, node_index in enumerate(node_of):
            slot[replica] = len(members[node_index])
            members[node_index].append(replica)

        def relocate(replica: int, target: int) -> None:
            app_index = replica_app[replica]
            source = node_of[replica]
            for dim, value in entries[app_profile[app_index]]:
                load[source][dim] -= value
                load[target][dim] += value
            request_cpu, request_memory, request_gpus = req_cpu[app_index], req_memory[app_index], req_gpus[app_index]
            cpu[source] -= request_cpu
            cpu[target] += request_cpu
            memory[source] -= request_memory
            memory[target] += request_memory
            gpus[source] -= request_gpus
            gpus[target] += request_gpus
            pods[source] -= 1
            pods[target] += 1
            counts = app_count[source]
            counts[app_index] -= 1
            if not counts[app_index]:
                del counts[app_index]
            counts = app_count[target]
            counts[app_index] = counts.get(app_index, 0) + 1
            # Swap-remove from the source's member list, append to the target's.
            residents = members[source]
            last = residents.pop()
            if last != replica:
                residents[slot[replica]] = last
                slot[last] = slot[replica]
            slot[replica] = len(members[target])
            members[target].append(replica)
            node_of[replica] = target

        scale = sum(self_weight[app_profile[app_index]] for app_index in replica_app) / count
        if scale <= EPSILON:
            return 0
        temperature = ANNEAL_START_TEMPERATURE * scale
        steps = max(1, moves // ANNEAL_COOLING_STEP)
        cooling = (ANNEAL_END_TEMPERATURE / ANNEAL_START_TEMPERATURE) ** (1.0 / steps)
        rng = random.Random(seed)
        draw = rng.random
        exp = math.exp
        current = best = state.interference
        undo = array("l")  # (replica, node it left) for every move since the best plan
        accepted = 0
        swap_share, epsilon, cooling_step = ANNEAL_SWAP_SHARE, EPSILON, ANNEAL_COOLING_STEP
        next_cooling = cooling_step
        # Per app, what a proposal reads: profile id, requests, eligible nodes, spread cap.
        info = [
            (app_profile[i], req_cpu[i], req_memory[i], req_gpus[i], eligible[i], max_per_node[i])
            for i in range(len(apps))
        ]
        for step in range(moves):
            if step == next_cooling:
                temperature *= cooling
                next_cooling += cooling_step
            replica = int(draw() * count)
            app_index = replica_app[replica]
            profile, request_cpu, request_memory, request_gpus, targets, cap = info[app_index]
            source = node_of[replica]
            target = targets[int(draw() * len(targets))]
            if target == source:
                continue
            load_source, load_target = load[source], load[target]
            partner = -1
            if draw() >= swap_share:
                # A relocation, priced first: most are uphill and turned down before any capacity check.
                delta = self_weight[profile]
                for dim, value in entries[profile]:
                    delta += value * (load_target[dim] - load_source[dim])
                if delta > epsilon and draw() >= exp(-delta / temperature):
                    continue
                fits = (
                    pods[target] < cap_pods[target]
                    and cpu[target] + request_cpu <= cap_cpu[target]
                    and memory[target] + request_memory <= cap_memory[target]
                    and gpus[target] + request_gpus <= cap_gpus[target]
                    and app_count[target].get(app_index, 0) < cap
                )
            else:
                fits = False
            if not fits:
                # A swap with a resident of the target: what frees room once capacity binds.
                residents = members[target]
                if not residents:
                    continue
                partner = residents[int(draw() * len(residents))]
                other_app = replica_app[partner]
                if other_app == app_index:
                    continue
                other, other_cpu, other_memory, other_gpus, _, other_cap = info[other_app]
                other_set = eligible_set[other_app]
                if other_set is not None and source not in other_set:
                    continue
                if (
                    cpu[target] - other_cpu + request_cpu > cap_cpu[target]
                    or cpu[source] - request_cpu + other_cpu > cap_cpu[source]
                    or memory[target] - other_memory + request_memory > cap_memory[target]
                    or memory[source] - request_memory + other_memory > cap_memory[source]
                    or gpus[target] - other_gpus + request_gpus > cap_gpus[target]
                    or gpus[source] - request_gpus + other_gpus > cap_gpus[source]
                    or app_count[target].get(app_index, 0) >= cap
                    or app_count[source].get(other_app, 0) >= other_cap
                ):
                    continue
                delta = self_weight[profile] + self_weight[other] - 2 * cross[profile][other]
                for dim, value in entries[profile]:
                    delta += value * (load_target[dim] - load_source[dim])
                for dim, value in entries[other]:
                    delta += value * (load_source[dim] - load_target[dim])
                if delta > epsilon and draw() >= exp(-delta / temperature):
                    continue
            relocate(replica, target)
            undo.append(replica)
            undo.append(source)
            if partner >= 0:
                relocate(partner, source)
                undo.append(partner)
                undo.append(target)
            accepted += 1
            current += delta
            if current < best - epsilon:
                best = current
                del undo[:]
        # Back to the best plan seen: undo the moves made since, newest first.
        for position in range(len(undo) - 2, -1, -2):
            relocate(undo[position], undo[position + 1])
        for replica, (app_index, position) in enumerate(movable):
            assignment[app_index][position] = node_of[replica]
        state.interference = sum_interference(apps, assignment)
        return accepted

    def exact(self, replicas: list[int], incumbent: float) -> tuple[bool, list[int] | None]:
        """Branch and bound over `replicas` (placed on top of the current state).

        Returns (finished, choice): finished is False when the budget ran out;
        choice is the node index per replica of the best plan strictly better
        than `incumbent`, or None when none was found.
        """
        state = self.state
        depth_count = len(replicas)
        best: list[float] = [incumbent]
        best_choice: list[list[int] | None] = [None]
        choice: list[int] = []
        budget = [EXACT_SEARCH_BUDGET]
        signatures = [
            (tuple(sorted(node.labels.items())), node.cpu_millicores, node.memory_bytes, node.pods, node.gpus)
            for node in self.nodes
        ]

        def remaining_bound(depth: int) -> float:
            # Each later replica adds at least its cheapest marginal now
            # (profiles are non-negative, so marginals only grow).
            bound = 0.0
            for app_index in replicas[depth:]:
                profile = self.apps[app_index].profile
                bound += min((state.marginal(profile, n) for n in self.eligible[app_index]), default=0.0)
            return bound

        def search(depth: int) -> None:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            if depth == depth_count:
                if state.interference < best[0] - EPSILON:
                    best[0] = state.interference
                    best_choice[0] = list(choice)
                return
            if state.interference + remaining_bound(depth) >= best[0] - EPSILON:
                return
            app = self.apps[replicas[depth]]
            options = []
            tried_empty: set[tuple[Any, ...]] = set()
            for node_index in self.eligible[app.index]:
                if state.reject_reason(app, node_index) is not None:
                    continue
                if state.pods[node_index] == 0:
                    if signatures[node_index] in tried_empty:
                        continue  # an identical empty node was already tried at this depth
                    tried_empty.add(signatures[node_index])
                options.append(
                    (
                        state.marginal(app.profile, node_index),
                        state.balance(node_index),
                        state.pods[node_index],
                        node_index,
                    )
                )
            for *_, node_index in sorted(options):
                state.add(app, node_index)
                choice.append(node_index)
                search(depth + 1)
                choice.pop()
                state.remove(app, node_index)

        search(0)
        return budget[0] > 0, best_choice[0]


def sum_interference(apps: Sequence[App], assignment: Sequence[Sequence[int]]) -> float:
    """Total interference of an assignment (app index -> node index per replica), from scratch."""
    # Per node, the sum over pairs equals (|S|^2 - sum |p|^2) / 2 for S the summed profile.
    loads: dict[int, list[float]] = {}
    self_terms = 0.0
    for app_index, replicas in enumerate(assignment):
        profile = apps[app_index].profile
        for node_index in replicas:
            load = loads.setdefault(node_index, [0.0] * len(profile))
            for dim, value in sparse(profile):
                load[dim] += value
            self_terms += dot(profile, profile)
    return max(0.0, (sum(dot(load, load) for load in loads.values()) - self_terms) / 2)


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


def anneal_budget(movable: int, search_effort: float, score: float, lower_bound: float) -> int:
    """Proposed moves the annealing gets (0: skipped), from the instance size, never from a clock.

    `movable` counts the replicas the search may move; `score` and
    `lower_bound` are the local-search plan's interference and the bound
    (scores). Skipped when the plan is already within ANNEAL_SKIP_GAP /
    search_effort of the bound (there is at most that much left to gain),
    unless it has at most ANNEAL_ALWAYS_UP_TO movable replicas.
    """
    if search_effort <= 0 or movable < 2 or score <= lower_bound + EPSILON:
        return 0
    if movable > ANNEAL_ALWAYS_UP_TO and score - lower_bound <= ANNEAL_SKIP_GAP / search_effort * lower_bound + EPSILON:
        return 0
    moves = min(max(ANNEAL_MOVES, ANNEAL_MIN_PER_REPLICA * movable), ANNEAL_MAX_PER_REPLICA * movable)
    return int(search_effort * moves)


def plan_placement(
    apps: list[App], nodes: list[Node], previous: object = None, rebalance: bool = False,
    search_effort: float = 1.0,
) -> Plan:
    """Compute the placement of validated apps on validated nodes (see module doc).

    `search_effort` scales the annealing budget (0 turns it off; 1 is the
    default; 10 searches ten times as long).
    """
    search_effort = check_search_effort(search_effort)
    _check_pins(apps, nodes)
    previous_nodes = {} if rebalance else _previous_nodes(previous, apps, nodes)
    engine = _Engine(apps, nodes)
    state = engine.state
    assignment: list[list[int]] = [[] for _ in apps]
    kept: list[str] = []
    moved: list[dict[str, Any]] = []
    apps_by_name = {app.name: app.index for app in apps}

    for app in apps:
        for node_index in previous_nodes.get(app.index, [])[: app.replicas]:
            reason = state.reject_reason(app, node_index)
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

    all_profiles = [app.profile for app in apps for _ in range(app.replicas)]
    lower_bound = interference_lower_bound(all_profiles, len(nodes))

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
        incumbent = sum_interference(apps, assignment) if failure is None else math.inf
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

    for app_index, replicas in enumerate(assignment):
        replicas[len(fixed[app_index]):] = sorted(replicas[len(fixed[app_index]):])
    for entry in moved:
        entry["to"] = [nodes[n].name for n in assignment[apps_by_name[entry["app"]]]]
    total = sum_interference(apps, assignment)
    return Plan(
        apps=apps,
        nodes=nodes,
        assignment=assignment,
        total_interference=total,
        lower_bound=lower_bound,
        proven_optimal=proven or total <= lower_bound + EPSILON,
        method=method,
        kept=kept,
        moved=moved,
    )


def place(
    apps: object, nodes: object, previous: object = None, rebalance: object = False, strict: object = False, *,
    search_effort: object = 1.0,
) -> Plan:
    """Validate raw apps and nodes (plain data) and compute their placement.

    `search_effort` (0 to 100, default 1) trades time for plan quality: it
    multiplies the annealing's move budget (see plan_placement).

    Raises AppInputError / NodeInputError on bad input, UnschedulableError when
    an app fits no node, and InterferenceError in strict mode when the plan
    still has interference.
    """
    app_list = parse_apps(apps)
    node_list = parse_nodes(nodes)
    effort = check_search_effort(search_effort)
    plan = plan_placement(
        app_list, node_list, previous=previous, rebalance=parse_flag(rebalance, "rebalance"), search_effort=effort
    )
    if parse_flag(strict, "strict"):
        warning = plan.warning()
        if warning:
            raise InterferenceError(f"strict placement: {warning}")
    return plan


def placed_apps(items: Sequence[Mapping[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """The input app items, same order, each with `nodes`: one node name per replica."""
    return [dict(item, nodes=plan.node_names(index)) for index, item in enumerate(items)]

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
   none is left.
4. Exact search: when the plan is not proven optimal and the instance is
   small, a depth-first branch and bound (with symmetry breaking over identical
   empty nodes) finds the true optimum within a fixed budget of search nodes.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import AppInputError, InterferenceError, UnschedulableError
from .interference import EPSILON, Profile, dot, interference_lower_bound, pair_reason
from .model import App, Node, parse_apps, parse_nodes

# Exact search runs only when the plan is not proven optimal and it has at
# most this many replicas to place; it stops after EXACT_SEARCH_BUDGET search
# nodes and keeps the best plan found (still flagged as not proven).
EXACT_SEARCH_MAX_REPLICAS = 16
EXACT_SEARCH_BUDGET = 200_000
LOCAL_SEARCH_MAX_PASSES = 50


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

    def interfering_pairs(self) -> list[dict[str, Any]]:
        """Pairs of apps sharing a node with a positive score, grouped per node."""
        per_node: list[list[int]] = [[] for _ in self.nodes]
        for app_index, replicas in enumerate(self.assignment):
            for node_index in replicas:
                per_node[node_index].append(app_index)
        pairs: dict[tuple[int, int, int], float] = {}
        for node_index, residents in enumerate(per_node):
            for i, left in enumerate(residents):
                for right in residents[i + 1:]:
                    score = dot(self.apps[left].profile, self.apps[right].profile)
                    if score > EPSILON:
                        key = (node_index, min(left, right), max(left, right))
                        pairs[key] = pairs.get(key, 0.0) + score
        return [
            {
                "node": self.nodes[node_index].name,
                "apps": [self.apps[left].name, self.apps[right].name],
                "score": round(score, 6),
                "reason": pair_reason(self.apps[left].profile, self.apps[right].profile)
                if left != right
                else "replicas of one app share the node",
            }
            for (node_index, left, right), score in sorted(pairs.items())
        ]

    def warning(self) -> str | None:
        """A sentence naming the colliding apps, or None for an interference-free plan."""
        if self.total_interference <= EPSILON:
            return None
        pairs = self.interfering_pairs()
        shown = "; ".join(f"{p['apps'][0]} and {p['apps'][1]} share {p['node']} ({p['reason']})" for p in pairs[:10])
        more = f"; and {len(pairs) - 10} more pairs" if len(pairs) > 10 else ""
        if self.lower_bound > EPSILON or self.proven_optimal:
            why = "zero interference is impossible with these nodes"
        else:
            why = "no interference-free plan was found"
        hint = ""
        if self.kept and any(p["apps"][0] in self.kept or p["apps"][1] in self.kept for p in pairs):
            hint = " (apps kept where they run; rebalance=true may lower it)"
        return (
            f"{why}: total interference {self.total_interference:g}, lower bound {self.lower_bound:g}{hint}: "
            f"{shown}{more}"
        )

    def report(self) -> dict[str, Any]:
        """Plain-data summary: scores, bound, per-node residents, interfering pairs."""
        per_node: dict[str, list[str]] = {node.name: [] for node in self.nodes}
        for app_index, replicas in enumerate(self.assignment):
            for node_index in replicas:
                per_node[self.nodes[node_index].name].append(self.apps[app_index].name)
        node_scores: dict[str, float] = dict.fromkeys(per_node, 0.0)
        pairs = self.interfering_pairs()
        for pair in pairs:
            node_scores[pair["node"]] += pair["score"]
        return {
            "total_interference": round(self.total_interference, 6),
            "lower_bound": round(self.lower_bound, 6),
            "proven_optimal": self.proven_optimal,
            "method": self.method,
            "nodes": [
                {"name": name, "apps": residents, "interference": round(node_scores[name], 6)}
                for name, residents in per_node.items()
            ],
            "pairs": pairs,
            "kept": list(self.kept),
            "moved": list(self.moved),
            "warning": self.warning(),
        }


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
    """

    def __init__(self, profile: Profile, eligible: list[int], state: _State) -> None:
        self.profile = profile
        self.eligible = eligible
        self.latest: dict[int, int] = {}  # node index -> version of its newest entry
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
        aside = []
        chosen = None
        heap = self.heap
        while heap and heap[0][0] < below:
            entry = heapq.heappop(heap)
            node_index, version = entry[3], entry[4]
            if version != self.latest[node_index]:
                continue  # superseded by a newer entry for the same node
            if version != state.version[node_index]:
                heapq.heappush(heap, self.entry(state, node_index))  # only grew since: re-file
                continue
            if node_index != exclude and state.reject_reason(app, node_index) is None:
                chosen = entry
                break
            if not state.full(node_index):
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
        self._interned: dict[tuple[int, ...], list[int]] = {}
        for app in apps:
            self.eligible.append(self._eligible_nodes(app))
            self.state.max_per_node[app.index] = max(1, math.ceil(app.replicas / max(1, len(self.eligible[-1]))))

    def _eligible_nodes(self, app: App) -> list[int]:
        key = (app.pinned_node, app.node_selector, app.gpus, app.cpu_millicores, app.memory_bytes)
        cached = self._eligibility_cache.get(key)
        if cached is None:
            nodes = tuple(node.index for node in self.nodes if static_reject_reason(app, node) is None)
            cached = self._interned.setdefault(nodes, list(nodes))
            self._eligibility_cache[key] = cached
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
        raise AppInputError(None, None, "previous", "must be a mapping of app name to the list of its nodes")
    by_name = {app.name: app for app in apps}
    node_index = {node.name: node.index for node in nodes}
    result: dict[int, list[int]] = {}
    for name, names in previous.items():
        app = by_name.get(name)
        if app is None:
            continue  # an app that left the list: the caller prunes it
        node_names = [names] if isinstance(names, str) else names
        if not isinstance(node_names, Sequence) or not all(isinstance(n, str) for n in node_names):
            raise AppInputError(app.index, app.name, "previous", "must be a list of node names")
        unknown = [n for n in node_names if n not in node_index]
        if unknown:
            raise AppInputError(
                app.index, app.name, "previous",
                f"unknown node {unknown[0]!r}: not in the node list ({', '.join(sorted(node_index)[:10])})",
            )
        result[app.index] = [node_index[n] for n in node_names]
    return result


def _check_pins(apps: list[App], nodes: list[Node]) -> None:
    names = {node.name for node in nodes}
    for app in apps:
        if app.pinned_node is not None and app.pinned_node not in names:
            raise AppInputError(app.index, app.name, "node", f"unknown node {app.pinned_node!r}: not in the node list")


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


def plan_placement(apps: list[App], nodes: list[Node], previous: object = None, rebalance: bool = False) -> Plan:
    """Compute the placement of validated apps on validated nodes (see module doc)."""
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


def place(apps: object, nodes: object, previous: object = None, rebalance: bool = False, strict: bool = False) -> Plan:
    """Validate raw apps and nodes (plain data) and compute their placement.

    Raises AppInputError / NodeInputError on bad input, UnschedulableError when
    an app fits no node, and InterferenceError in strict mode when the plan
    still has interference.
    """
    app_list = parse_apps(apps)
    node_list = parse_nodes(nodes)
    plan = plan_placement(app_list, node_list, previous=previous, rebalance=rebalance)
    if strict:
        warning = plan.warning()
        if warning:
            raise InterferenceError(f"strict placement: {warning}")
    return plan


def placed_apps(items: Sequence[Mapping[str, Any]], plan: Plan) -> list[dict[str, Any]]:
    """The input app items, same order, each with `nodes`: one node name per replica."""
    return [dict(item, nodes=plan.node_names(index)) for index, item in enumerate(items)]

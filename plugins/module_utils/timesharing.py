"""CPU time-sharing: what an oversubscribed node does to every app on it, and the search that counts it.

An app's profile says how hard it presses on shared resources; its
`cpu_demand` (cores it would use if it had them, model.App) says how much CPU
time it wants. On a node whose demand D (the sum over its replicas) exceeds
its CPUs C, the kernel time-shares: each demanding replica runs a fraction
C/D of the time, so it is slowed by the factor t = D/C whatever its type, and
two replicas take turns instead of running at once. That changes who contends
with whom:

- two demanding replicas on one node run at the same instant with probability
  c = (C - d_i)/(D - d_i) (what is left of the CPUs while i runs, over the
  demand of the others), 0 for two 1-core apps on a 1-CPU node, 1 when the
  node is not oversubscribed;
- a replica on another node of the same group (sharing.py) runs a fraction
  C_m/D_m of the time, so their shared-resource contention counts that much;
- an app with no declared demand (0) is not slowed by the time-sharing and is
  taken to run all the time.

The predicted slowdown of a replica i on node n is then

    s_i = t_n(i) * (1 + sum over other replicas j of sum_r p_ir p_jr share_r(n, m_j) c(i, j))

with t_n(i) = max(1, D_n / C_n) for a demanding replica and 1 otherwise, and
the plan's time-shared score is sum_i (s_i - 1). With no node oversubscribed,
every t and c is 1 and that score is twice the engine's pair score, so the
plans are the ones the engine makes without it. When no app declares a
demand, nothing here runs.

Where it is used: placement.py runs `improve` on the engine's plan when some
app declares a demand (moves and swaps that lower the time-shared score, each
checked by feasibility.py like every other move); the report gives the
oversubscribed nodes and the predicted slowdowns; the experiment
(plugin_utils/experiment_model.py) sets the predicted slowdown of each run
beside the measured one. Every figure comes from per-node sums
(`_TimeShared`), in time linear in the replicas; the tests check them against
the definition above, computed pair by pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .feasibility import FITS
from .interference import EPSILON, PRESSURE_DIMENSIONS, Profile
from .model import App, Node
from .sharing import NO_SHARING, Sharing

# The improvement pass stops after this many priced moves and swaps (one
# costs about 0.1 ms with hosts of 4 nodes, as it reprices every node of the
# hosts it touches), and swaps are tried only up to TIMESHARING_SWAP_MAX
# movable replicas (they are quadratic in them). Both bound its time on large
# instances (about 2 s of CPU at most); the report's method says the pass ran,
# not that it finished.
TIMESHARING_BUDGET = 20_000
TIMESHARING_SWAP_MAX = 400
TIMESHARING_MAX_PASSES = 20


def active(apps: Sequence[App]) -> bool:
    """True when some app declares a CPU demand: only then does time-sharing change a score."""
    return any(app.cpu_demand_millicores > 0 for app in apps)


def _capacity(cpu_millicores: int | None) -> float:
    # A node that does not say its CPUs is never oversubscribed; one with none free is by any demand.
    return float("inf") if cpu_millicores is None else float(max(cpu_millicores, 1))


def factor(demand: float, capacity: float) -> float:
    """How much slower a demanding replica runs on a node with this demand and capacity (1 when it fits)."""
    return max(1.0, demand / capacity)


def _together(demand: float, capacity: float, own: float) -> float:
    """Probability that another demanding replica runs while this one (demand `own`) runs on the same node."""
    if demand <= capacity or demand - own <= 0:
        return 1.0
    return max(0.0, (capacity - own) / (demand - own))  # below 1: demand > capacity


def node_demands(apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]]) -> list[int]:
    """Declared CPU demand (millicores) on each node under the assignment."""
    demand = [0] * len(nodes)
    for app, replicas in zip(apps, assignment, strict=True):
        for node_index in replicas:
            demand[node_index] += app.cpu_demand_millicores
    return demand


def slowdowns(
    apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]], sharing: Sharing = NO_SHARING
) -> list[list[float]]:
    """The predicted slowdown of every replica (per app, in replica order), in time linear in the replicas."""
    model = _TimeShared(apps, nodes, assignment, sharing)
    terms = [model.terms(node_index) for node_index in range(len(nodes))]
    return [[1 + terms[node_index][model.kind[app.index]] for node_index in placed]
            for app, placed in zip(apps, assignment, strict=True)]


@dataclass(frozen=True)
class Oversubscribed:
    """A node whose declared demand exceeds its CPUs."""

    name: str
    demand_cores: float
    cpus: float
    factor: float


def oversubscribed(
    apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]]
) -> list[Oversubscribed]:
    """The nodes whose demand exceeds their CPUs under the assignment, in node order."""
    result = []
    for node, demand in zip(nodes, node_demands(apps, nodes, assignment), strict=True):
        capacity = _capacity(node.cpu_millicores)
        if demand > capacity:
            result.append(Oversubscribed(node.name, demand / 1000, capacity / 1000, round(demand / capacity, 6)))
    return result


def _term(kind: tuple[Profile, int], load: NodeLoad, cross: Sequence[float] | None) -> float:
    """(s_i - 1) of one replica of this kind (profile, demand) on the node of `load` (it included).

    `cross` is s_r times what the group's other nodes press while they run
    (None: not in a group). The one home of the formula in the module's
    docstring: the engine's sums (_TimeShared) and the extender's (NodeLoad,
    added_cost) both price with it.
    """
    profile, own_demand = kind
    demand, capacity, busy, idle = load.demand, load.capacity, load.busy, load.idle
    slowed = factor(demand, capacity)
    if own_demand:
        chance = _together(demand, capacity, own_demand)
        same = sum(p * (chance * (b - p) + i) for p, b, i in zip(profile, busy, idle, strict=True) if p)
    else:
        same = sum(p * (b / slowed + i - p) for p, b, i in zip(profile, busy, idle, strict=True) if p)
    if cross is not None:
        same += sum(p * c for p, c in zip(profile, cross, strict=True) if p)
    return (slowed if own_demand else 1.0) * (1 + same) - 1


class NodeLoad:
    """One node's replicas as time-sharing sees them, kept up to date one replica at a time.

    What an online scheduler keeps per node (the extender's PodIndex): the
    node's CPUs (millicores; None when unknown: never oversubscribed), the
    demand on it, the profile sums of its demanding (`busy`) and other
    (`idle`) replicas, and its replicas per kind (profile, demand).
    """

    __slots__ = ("busy", "capacity", "demand", "idle", "kinds")

    def __init__(self, cpu_millicores: int | None = None) -> None:
        self.capacity = _capacity(cpu_millicores)
        self.demand = 0.0
        self.busy = [0.0] * len(PRESSURE_DIMENSIONS)
        self.idle = [0.0] * len(PRESSURE_DIMENSIONS)
        self.kinds: dict[tuple[Profile, int], int] = {}

    def copy(self) -> NodeLoad:
        """A copy to price a change on, leaving this one's sums exactly as they are."""
        other = NodeLoad()
        other.capacity, other.demand = self.capacity, self.demand
        other.busy, other.idle, other.kinds = list(self.busy), list(self.idle), dict(self.kinds)
        return other

    def with_cpus(self, cpu_millicores: int | None) -> NodeLoad:
        """A copy on a node of these CPUs (an online scheduler learns them from the Node, not from its pods)."""
        other = self.copy()
        other.capacity = _capacity(cpu_millicores)
        return other

    def add(self, profile: Profile, demand: int, sign: int = 1) -> None:
        """Count one replica in (sign 1) or out (sign -1)."""
        key = (profile, demand)
        count = self.kinds.get(key, 0) + sign
        if count:
            self.kinds[key] = count
        else:
            self.kinds.pop(key, None)
        self.demand += sign * demand
        sums = self.busy if demand else self.idle
        for dim, value in enumerate(profile):
            sums[dim] += sign * value

    def weighted(self) -> list[float]:
        """What the node's replicas press on the group while they run: busy sums times the run fraction, plus idle."""
        running = 1 / factor(self.demand, self.capacity)
        return [running * b + i for b, i in zip(self.busy, self.idle, strict=True)]

    def exposure(self) -> list[float]:
        """How much the node's cost rises per unit of cross-node pressure, per resource."""
        slowed = factor(self.demand, self.capacity)
        return [slowed * b + i for b, i in zip(self.busy, self.idle, strict=True)]

    def cost(self, cross: Sequence[float] | None) -> float:
        """The sum of (s_i - 1) over the node's replicas."""
        return sum(count * _term(kind, self, cross) for kind, count in self.kinds.items())


def added_cost(
    kind: tuple[Profile, int], load: NodeLoad, *, sharing: Sharing = NO_SHARING,
    others: tuple[Sequence[float], Sequence[float]] | None = None,
) -> float:
    """How much the time-shared score rises when one replica of `kind` (profile, demand) joins the node of `load`.

    `load` is left as it is (the change is priced on a copy).

    With `sharing`, a node in a group passes as `others` the sums over the
    group's *other* nodes of NodeLoad.weighted and NodeLoad.exposure (None:
    not in a group). The node's own cross term does not change (its group's
    pressure rises by what it adds itself); each other node's cost rises by
    sum_r s_r times the change of this node's weighted pressure times its
    exposure. The same number as the engine's _TimeShared pricing the change
    (the property tests check it).
    """
    grouped = others if sharing.active else None
    cross = [s * w for s, w in zip(sharing.shares, grouped[0], strict=True)] if grouped else None
    after = load.copy()
    after.add(*kind)
    change = after.cost(cross) - load.cost(cross)
    if grouped:
        rise = zip(sharing.shares, after.weighted(), load.weighted(), grouped[1], strict=True)
        change += sum(s * (now - before) * exposed for s, now, before, exposed in rise if s)
    return change


class Usage(Protocol):
    """What `improve` needs of the engine's search._State: its usage, and its one feasibility check."""

    def add(self, app: App, node_index: int) -> None: ...

    def remove(self, app: App, node_index: int) -> None: ...

    def check(self, app_index: int, node_index: int) -> int: ...

    def check_swap(self, app_index: int, node_index: int, other_app: int, other_node: int) -> int: ...


class _TimeShared:
    """Per-node sums for pricing a move under the time-shared score.

    A node's cost is the sum of (s_i - 1) over its replicas (NodeLoad.cost).
    It needs the node's demand, the profile sums of its demanding and other
    replicas, and the sum over its group of what each node's replicas press
    while they run (NodeLoad.weighted). A replica's term depends only on its
    profile and demand (its `kind`), so a node counts its residents per kind
    and prices each kind once. A move changes two nodes' sums and, when they
    are in groups, the cost of every node in those groups.
    """

    def __init__(self, apps: Sequence[App], nodes: Sequence[Node], assignment: Sequence[Sequence[int]],
                 sharing: Sharing) -> None:
        self.shares = sharing.shares if sharing.active else (0.0,) * len(PRESSURE_DIMENSIONS)
        self.shared = any(self.shares)
        self.group = sharing.groups(nodes)
        members: dict[int, list[int]] = {}
        for node_index, group in enumerate(self.group):
            members.setdefault(group, []).append(node_index)
        self.members = {group: tuple(indices) for group, indices in members.items()}
        self.kind = [(app.profile, app.cpu_demand_millicores) for app in apps]
        self.loads = [NodeLoad(node.cpu_millicores) for node in nodes]
        for app_index, replicas in enumerate(assignment):
            for node_index in replicas:
                self.loads[node_index].add(*self.kind[app_index])
        self.cost = [self._node_cost(node_index) for node_index in range(len(nodes))]

    def _cross(self, node_index: int, group_sums: list[float] | None) -> list[float] | None:
        group = self.group[node_index]
        if group >= 0 or not self.shared:
            return None
        own = self.loads[node_index].weighted()
        if group_sums is None:
            group_sums = self._group_sums(group)
        return [s * (g - o) for s, g, o in zip(self.shares, group_sums, own, strict=True)]

    def terms(self, node_index: int) -> dict[tuple[Profile, int], float]:
        """Each resident kind's (predicted slowdown - 1) per replica on the node."""
        load = self.loads[node_index]
        if not load.kinds:
            return {}
        cross = self._cross(node_index, None)
        return {kind: _term(kind, load, cross) for kind in load.kinds}

    def _node_cost(self, node_index: int, group_sums: list[float] | None = None) -> float:
        load = self.loads[node_index]
        return load.cost(self._cross(node_index, group_sums)) if load.kinds else 0.0

    def _group_sums(self, group: int) -> list[float]:
        sums = [0.0] * len(PRESSURE_DIMENSIONS)
        for member in self.members[group]:
            for dim, value in enumerate(self.loads[member].weighted()):
                sums[dim] += value
        return sums

    def touched(self, *node_indices: int) -> set[int]:
        """The nodes whose cost a change on these nodes can change: theirs, and their groups' when shared."""
        result = set(node_indices)
        if self.shared:
            for node_index in node_indices:
                if self.group[node_index] < 0:
                    result.update(self.members[self.group[node_index]])
        return result

    def reprice(self, nodes: set[int]) -> float:
        """Recompute the cost of `nodes` and return how much the total changed."""
        sums: dict[int, list[float]] = {}
        change = 0.0
        for node_index in nodes:
            group = self.group[node_index]
            if group < 0 and self.shared and group not in sums:
                sums[group] = self._group_sums(group)
            cost = self._node_cost(node_index, sums.get(group))
            change += cost - self.cost[node_index]
            self.cost[node_index] = cost
        return change

    def move(self, app_index: int, source: int, target: int) -> float:
        """Move one replica in the sums and return how much the total changed."""
        kind = self.kind[app_index]
        self.loads[source].add(*kind, -1)
        self.loads[target].add(*kind)
        return self.reprice(self.touched(source, target))

    def undo(self, app_index: int, source: int, target: int) -> None:
        """Take back move(app_index, source, target)."""
        kind = self.kind[app_index]
        self.loads[target].add(*kind, -1)
        self.loads[source].add(*kind)
        self.reprice(self.touched(source, target))


def improve(
    state: Usage, assignment: list[list[int]], movable: Sequence[tuple[int, int]], *,
    apps: Sequence[App], nodes: Sequence[Node], sharing: Sharing = NO_SHARING,
) -> float:
    """Move and swap the movable replicas while that lowers the time-shared score; return the plan's score.

    `state` is the engine's search._State: a change that would lower the
    score is asked of its one feasibility check (check / check_swap, after
    taking the replica off) and applied to it, so its usage stays that of
    the plan. The first improvement found is taken. Replicas of one kind
    (profile and demand) price alike, so a move or swap already priced as no
    better is not priced again until some change is kept. Passes repeat until
    one changes nothing, TIMESHARING_MAX_PASSES, or TIMESHARING_BUDGET priced
    changes.
    """
    model = _TimeShared(apps, nodes, assignment, sharing)
    budget = TIMESHARING_BUDGET
    replicas = list(movable)
    swaps = len(replicas) <= TIMESHARING_SWAP_MAX
    no_better: set[tuple[object, ...]] = set()

    for _pass in range(TIMESHARING_MAX_PASSES):
        changed = False
        for app_index, position in replicas:
            source = assignment[app_index][position]
            app = apps[app_index]
            for target in range(len(nodes)):
                key: tuple[object, ...] = (model.kind[app_index], source, target)
                if target == source or key in no_better:
                    continue
                if budget <= 0:
                    return sum(model.cost)
                budget -= 1
                if model.move(app_index, source, target) < -EPSILON:
                    state.remove(app, source)
                    if state.check(app_index, target) == FITS:
                        state.add(app, target)
                        assignment[app_index][position] = target
                        changed = True
                        no_better.clear()
                        break
                    state.add(app, source)
                else:
                    no_better.add(key)
                model.undo(app_index, source, target)
        if swaps:
            for first, (app_index, position) in enumerate(replicas):
                for other_app, other_position in replicas[first + 1:]:
                    source, target = assignment[app_index][position], assignment[other_app][other_position]
                    key = (model.kind[app_index], source, model.kind[other_app], target)
                    if source == target or model.kind[app_index] == model.kind[other_app] or key in no_better:
                        continue
                    if budget <= 0:
                        return sum(model.cost)
                    budget -= 1
                    change = model.move(app_index, source, target) + model.move(other_app, target, source)
                    if change < -EPSILON and state.check_swap(app_index, target, other_app, source) == FITS:
                        for which, left, right in ((app_index, source, target), (other_app, target, source)):
                            state.remove(apps[which], left)
                            state.add(apps[which], right)
                        assignment[app_index][position] = target
                        assignment[other_app][other_position] = source
                        changed = True
                        no_better.clear()
                        continue
                    if change >= -EPSILON:
                        no_better.add(key)
                    model.undo(other_app, target, source)
                    model.undo(app_index, source, target)
        if not changed:
            break
    return sum(model.cost)

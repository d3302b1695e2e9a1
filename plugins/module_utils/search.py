"""The searches of the placement engine: greedy, local search, simulated annealing and exact search.

placement.py runs them in that order (its module doc says when each runs and
why); each asks feasibility.py whether a replica may go on a node. `_State`
holds the usage of every node while a plan is built, `_NodeClass` the nodes
eligible for one kind of app in a heap by marginal cost, and `_Engine` the
searches over them.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from array import array
from collections.abc import Sequence
from typing import Any

from .errors import UnschedulableError
from .feasibility import CPU, FITS, MEMORY, Feasibility, unschedulable_message
from .interference import EPSILON, PRESSURE_DIMENSIONS, Profile, dot
from .model import App, Node
from .sharing import NO_SHARING, Sharing

# Exact search runs only when the plan is not proven optimal and it has at
# most this many replicas to place; it stops after EXACT_SEARCH_BUDGET search
# nodes and keeps the best plan found (still flagged as not proven).
EXACT_SEARCH_MAX_REPLICAS = 16
EXACT_SEARCH_BUDGET = 200_000
LOCAL_SEARCH_MAX_PASSES = 50

# Annealing budget, in proposed moves, for search_effort 1: ANNEAL_MOVES
# spread over the movable replicas, but at least ANNEAL_MIN_PER_REPLICA and at
# most ANNEAL_MAX_PER_REPLICA moves per replica (small instances get searched
# thoroughly, 10,000 replicas still finish in seconds). 2000, not 1000: below 200
# movable replicas that doubles the moves (at and above 200 nothing changes), and on
# the placement benchmark's heterogeneous 80 x 20 instances it brought every plan
# within 1% of the best known (mean 0.32%, worst 0.82%, against 0.62% and 1.99%;
# three annealing seeds: mean 0.39%, 4 plans of 36 above 1% against 0.69% and 8),
# for about 1.2 times the CPU (docs/benchmarks.md, "Where the budget is ample").
ANNEAL_MOVES = 200_000
ANNEAL_MIN_PER_REPLICA = 100
ANNEAL_MAX_PER_REPLICA = 2000
# Temperatures, as multiples of the mean self-weight |p|^2 of the movable
# replicas (the score one more identical neighbour costs): a move that adds
# that much is taken half the time at the start and almost never at the end.
ANNEAL_START_TEMPERATURE = 1.5
ANNEAL_END_TEMPERATURE = 0.02
# ...and where the budget is ample, at least ANNEAL_COLD_FROM moves per movable
# replica (up to about 200 replicas at search_effort 1, where ANNEAL_MAX_PER_REPLICA
# caps it), it starts and ends colder: less of it goes into undoing the local-search
# plan and more into the last exchanges. Measured on the placement benchmark's
# heterogeneous 80 x 20 instances (twelve, half of them unseen while choosing, three
# annealing seeds each): 0.69% above the best plan known on average instead of 1.01%,
# 8 plans of 36 above 1% instead of 18, at 5% less CPU; with 100 moves per replica
# (2,000 x 200, 10,000 x 1,000) colder plans came out 0.1-0.5% worse, so the schedule
# above stays there (docs/benchmarks.md, "Where the budget is ample").
ANNEAL_COLD_FROM = 500
ANNEAL_COLD_START_TEMPERATURE = 0.5
ANNEAL_COLD_END_TEMPERATURE = 0.01
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


@functools.lru_cache(maxsize=4096)
def sparse(profile: Profile) -> tuple[tuple[int, float], ...]:
    """The non-zero entries of a profile as (dimension, pressure): most apps press on one resource."""
    return tuple((dim, value) for dim, value in enumerate(profile) if value)


class _State:
    """Mutable per-node usage while a plan is built.

    Every search prices a replica by `vectors[app index]`: its profile, or
    with `sharing` the profile extended by one group coordinate per shared
    resource (sharing.py). A node's load holds its own sums and a copy of its
    group's sums, which add() and remove() update on the group's other nodes
    (`mates`) too.
    """

    def __init__(self, apps: list[App], nodes: list[Node], sharing: Sharing = NO_SHARING) -> None:
        self.apps = apps
        self.nodes = nodes
        self.sharing = sharing
        self.vectors = [sharing.extend(app.profile) for app in apps]
        self.group = sharing.groups(nodes)
        members: dict[int, list[int]] = {}
        for node_index, group in enumerate(self.group):
            if group < 0:
                members.setdefault(group, []).append(node_index)
        self.mates: list[tuple[int, ...]] = [
            tuple(m for m in members.get(group, ()) if m != node_index) for node_index, group in enumerate(self.group)
        ]
        width = len(self.vectors[0]) if apps else 0
        self.load: list[list[float]] = [[0.0] * width for _ in nodes]
        self.cpu = [0] * len(nodes)
        self.memory = [0] * len(nodes)
        self.pods = [0] * len(nodes)
        self.gpus = [0] * len(nodes)
        self.app_count: list[dict[int, int]] = [{} for _ in nodes]
        self.version = [0] * len(nodes)
        self.interference = 0.0
        self.feasibility = Feasibility(apps, nodes, (self.cpu, self.memory, self.pods, self.gpus, self.app_count))
        self.max_per_node = self.feasibility.max_per_node
        # check(app index, node index): FITS (0) or the constraint broken (feasibility.py); check_swap the
        # same for two replicas trading nodes; reason(app index, node index): check in words, None when it fits.
        self.check = self.feasibility.check
        self.check_swap = self.feasibility.check_swap
        self.reason = self.feasibility.reason

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

    def add(self, app: App, node_index: int) -> None:
        vector = self.vectors[app.index]
        self.interference += self.marginal(vector, node_index)
        self._move_load(vector, node_index, 1.0)
        self._account(app, node_index, 1)

    def remove(self, app: App, node_index: int) -> None:
        vector = self.vectors[app.index]
        self._move_load(vector, node_index, -1.0)
        self.interference -= self.marginal(vector, node_index)
        self._account(app, node_index, -1)

    def _move_load(self, vector: Profile, node_index: int, sign: float) -> None:
        load = self.load[node_index]
        for dim, value in sparse(vector):
            load[dim] += sign * value
        for mate in self.mates[node_index]:  # the group's sums, copied on each of its nodes
            mate_load = self.load[mate]
            for dim, value in group_entries(vector):
                mate_load[dim] += sign * value
            self.version[mate] += 1

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


@functools.lru_cache(maxsize=4096)
def group_entries(vector: Profile) -> tuple[tuple[int, float], ...]:
    """The group coordinates of an extended profile (sharing.py) as (dimension, value); () without sharing."""
    return tuple((dim, value) for dim, value in sparse(vector) if dim >= len(PRESSURE_DIMENSIONS))


@functools.lru_cache(maxsize=4096)
def node_entries(vector: Profile) -> tuple[tuple[int, float], ...]:
    """The node coordinates of an extended profile (all of a plain one) as (dimension, value)."""
    return tuple((dim, value) for dim, value in sparse(vector) if dim < len(PRESSURE_DIMENSIONS))


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
            code = FITS if node_index == exclude else state.check(app.index, node_index)
            if node_index != exclude and code == FITS:
                chosen = entry
                break
            node = state.nodes[node_index]
            if code == CPU and node.cpu_millicores is not None:
                heapq.heappush(self.parked_cpu, (state.cpu[node_index] - node.cpu_millicores, node_index, version))
            elif code == MEMORY and node.memory_bytes is not None:
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
    def __init__(self, apps: list[App], nodes: list[Node], sharing: Sharing = NO_SHARING) -> None:
        self.apps = apps
        self.nodes = nodes
        self.state = _State(apps, nodes, sharing)
        self.vectors = self.state.vectors
        self.annealed_score = math.nan
        self.classes: list[_NodeClass] = []
        self.class_of_app: list[int] = []
        self.classes_of_node: list[list[int]] = [[] for _ in nodes]
        # The nodes each app may ever use (feasibility.py), one shared list per distinct answer.
        self.eligible = self.state.feasibility.eligible

    def build_classes(self) -> None:
        by_key: dict[tuple[Any, ...], int] = {}
        for app in self.apps:
            key = (self.vectors[app.index], id(self.eligible[app.index]))
            if key not in by_key:
                by_key[key] = len(self.classes)
                node_class = _NodeClass(self.vectors[app.index], self.eligible[app.index], self.state)
                self.classes.append(node_class)
                for node_index in node_class.eligible:
                    self.classes_of_node[node_index].append(by_key[key])
            self.class_of_app.append(by_key[key])

    def add(self, app: App, node_index: int) -> None:
        self.state.add(app, node_index)

    def remove(self, app: App, node_index: int) -> None:
        self.state.remove(app, node_index)
        for changed in (node_index, *self.state.mates[node_index]):  # a group's sums dropped on all its nodes
            for class_index in self.classes_of_node[changed]:
                self.classes[class_index].push(self.state, changed)

    def greedy(self, replicas: list[int], assignment: list[list[int]]) -> UnschedulableError | None:
        """Place each replica (by app index) on its cheapest feasible node."""
        for app_index in replicas:
            app = self.apps[app_index]
            node_index = self.classes[self.class_of_app[app_index]].best(self.state, app)
            if node_index is None:
                reasons = [self.state.reason(app_index, n) for n in range(len(self.nodes))]
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
        vectors = self.vectors
        self_weight = [dot(vector, vector) for vector in vectors]
        for _ in range(LOCAL_SEARCH_MAX_PASSES):
            improved = False
            for app_index, position in movable:
                app = self.apps[app_index]
                current = assignment[app_index][position]
                # With sharing, a target in the current node's group is priced above what it costs (the
                # replica's own group share is counted twice): a move taken still strictly improves.
                staying = state.marginal(vectors[app_index], current) - self_weight[app_index]
                target = self.classes[self.class_of_app[app_index]].best(
                    state, app, exclude=current, below=round(staying - EPSILON, 9)
                )
                if target is not None and state.marginal(vectors[app_index], target) < staying - EPSILON:
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
        app_profile = [profile_ids.setdefault(vector, len(profile_ids)) for vector in self.vectors]
        profiles = list(profile_ids)
        entries = [sparse(p) for p in profiles]
        # With sharing (sharing.py): a move between two nodes of one group leaves the group's sums as they
        # are, so only the node coordinates move, and the group part of the self-weights is taken off its price.
        group = state.group
        mates = state.mates
        sharing = bool(state.sharing.shared_dims)
        own_entries = [node_entries(p) for p in profiles]
        shared_entries = [group_entries(p) for p in profiles]
        # Only with sharing: the products of the group coordinates, its diagonal the group part of each self-weight.
        group_cross = [
            [sum(v * dict(other).get(dim, 0.0) for dim, v in found) for other in shared_entries]
            for found in shared_entries
        ] if sharing else []
        group_self = [group_cross[index][index] for index in range(len(group_cross))]
        # The one entry of a one-hot profile (most apps press on one resource), else None: priced without a loop.
        one_hot = [found[0] if len(found) == 1 else None for found in entries]
        self_weight = [dot(p, p) for p in profiles]
        cross = [[dot(p, q) for q in profiles] for p in profiles]
        req_cpu = [app.cpu_millicores for app in apps]
        req_memory = [app.memory_bytes for app in apps]
        req_gpus = [app.gpus for app in apps]
        eligible = self.eligible
        # The one feasibility rule (feasibility.py), asked for every relocation and swap before it is made.
        check, check_swap = state.check, state.check_swap
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
            if sharing:
                profile_id = app_profile[app_index]
                for dim, value in own_entries[profile_id]:
                    load[source][dim] -= value
                    load[target][dim] += value
                if group[source] != group[target]:
                    for dim, value in shared_entries[profile_id]:
                        for node_index in (source, *mates[source]):
                            load[node_index][dim] -= value
                        for node_index in (target, *mates[target]):
                            load[node_index][dim] += value
            else:
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
        start, end = (
            (ANNEAL_COLD_START_TEMPERATURE, ANNEAL_COLD_END_TEMPERATURE) if moves >= ANNEAL_COLD_FROM * count
            else (ANNEAL_START_TEMPERATURE, ANNEAL_END_TEMPERATURE)
        )
        temperature = start * scale
        steps = max(1, moves // ANNEAL_COOLING_STEP)
        cooling = (end / start) ** (1.0 / steps)
        rng = random.Random(seed)
        draw = rng.random
        exp = math.exp
        current = best = state.interference
        undo = array("l")  # (replica, node it left) for every move since the best plan
        accepted = 0
        swap_share, epsilon, cooling_step = ANNEAL_SWAP_SHARE, EPSILON, ANNEAL_COOLING_STEP
        next_cooling = cooling_step
        # Per app, what a proposal reads: profile id and eligible nodes.
        info = [(app_profile[i], eligible[i]) for i in range(len(apps))]
        for step in range(moves):
            if step == next_cooling:
                temperature *= cooling
                next_cooling += cooling_step
            replica = int(draw() * count)
            app_index = replica_app[replica]
            profile, targets = info[app_index]
            source = node_of[replica]
            target = targets[int(draw() * len(targets))]
            if target == source:
                continue
            load_source, load_target = load[source], load[target]
            partner = -1
            if draw() >= swap_share:
                # A relocation, priced first: most are uphill and turned down before any capacity check.
                # This pricing (and the swap's two below) is written out on purpose: as one helper function the
                # same plans came out but the anneal ran 3-5% slower (200 x 20 heterogeneous inputs of
                # benchmarks/placement.py, before and after in one run, 2026-12-01).
                delta = self_weight[profile]
                single = one_hot[profile]
                if single is not None:
                    dim, value = single
                    delta += value * (load_target[dim] - load_source[dim])
                else:
                    for dim, value in entries[profile]:
                        delta += value * (load_target[dim] - load_source[dim])
                if sharing and group[source] == group[target]:
                    delta -= group_self[profile]
                if delta > epsilon and draw() >= exp(-delta / temperature):
                    continue
                fits = not check(app_index, target)
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
                if check_swap(app_index, target, other_app, source):
                    continue
                other = info[other_app][0]
                delta = self_weight[profile] + self_weight[other] - 2 * cross[profile][other]
                single = one_hot[profile]
                if single is not None:
                    dim, value = single
                    delta += value * (load_target[dim] - load_source[dim])
                else:
                    for dim, value in entries[profile]:
                        delta += value * (load_target[dim] - load_source[dim])
                single = one_hot[other]
                if single is not None:
                    dim, value = single
                    delta += value * (load_source[dim] - load_target[dim])
                else:
                    for dim, value in entries[other]:
                        delta += value * (load_source[dim] - load_target[dim])
                if sharing and group[source] == group[target]:
                    delta -= group_self[profile] + group_self[other] - 2 * group_cross[profile][other]
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
        state.interference = sum_interference(apps, assignment, state.sharing, self.nodes)
        # What the incremental prices say the restored plan scores: tests check it against the total from scratch.
        self.annealed_score = best
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
        # The labels include sharing's group label: nodes alike here are in one group, or both alone.
        signatures = [
            (tuple(sorted(node.labels.items())), node.cpu_millicores, node.memory_bytes, node.pods, node.gpus,
             node.taints, node.ready)
            for node in self.nodes
        ]

        def remaining_bound(depth: int) -> float:
            # Each later replica adds at least its cheapest marginal now
            # (profiles are non-negative, so marginals only grow).
            bound = 0.0
            for app_index in replicas[depth:]:
                vector = self.vectors[app_index]
                bound += min((state.marginal(vector, n) for n in self.eligible[app_index]), default=0.0)
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
                if state.check(app.index, node_index):
                    continue
                if state.pods[node_index] == 0:
                    if signatures[node_index] in tried_empty:
                        continue  # an identical empty node was already tried at this depth
                    tried_empty.add(signatures[node_index])
                options.append(
                    (
                        state.marginal(self.vectors[app.index], node_index),
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


def sum_interference(
    apps: Sequence[App], assignment: Sequence[Sequence[int]], sharing: Sharing = NO_SHARING,
    nodes: Sequence[Node] = (),
) -> float:
    """Total interference of an assignment (app index -> node index per replica), from scratch.

    With `sharing` (and the `nodes` the indices refer to), pairs on different
    nodes of one group count too (sharing.py).
    """
    if sharing.shared_dims:
        return _shared_interference(apps, assignment, sharing, nodes)
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


def _shared_interference(
    apps: Sequence[App], assignment: Sequence[Sequence[int]], sharing: Sharing, nodes: Sequence[Node]
) -> float:
    """sum_interference with sharing: node coordinates summed per node, group coordinates per group."""
    groups = sharing.groups(nodes)
    node_loads: dict[int, list[float]] = {}
    group_loads: dict[int, list[float]] = {}
    self_terms = 0.0
    for app_index, replicas in enumerate(assignment):
        vector = sharing.extend(apps[app_index].profile)
        for node_index in replicas:
            load = node_loads.setdefault(node_index, [0.0] * len(vector))
            for dim, value in node_entries(vector):
                load[dim] += value
            load = group_loads.setdefault(groups[node_index], [0.0] * len(vector))
            for dim, value in group_entries(vector):
                load[dim] += value
            self_terms += dot(vector, vector)
    squares = sum(dot(load, load) for load in (*node_loads.values(), *group_loads.values()))
    return max(0.0, (squares - self_terms) / 2)

"""A long-running reference search for the placement benchmark (not the product's engine).

Written apart from `plugins/module_utils/placement.py` on purpose, so that
the engine is measured against a search that shares none of its code: its own
feasible start (first fit, biggest CPU request first, onto the node with the
most CPU left), its own constraint checks and its own simulated annealing over
relocations and swaps. The benchmark gives it ten times the engine's move
budget; the best plan it finds is the yardstick "how good could it be".

Same objective as the engine: the sum over nodes of the pairwise dot products
of the pressure profiles there (score, no unit).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from ansible_collections.interference.orchestrator.plugins.module_utils.model import App, Node


def _cap(value: int | None) -> float:
    return math.inf if value is None else float(value)


def _eligible(app: App, node: Node) -> bool:
    """Static constraints: pin, selector, GPUs, and a request no bigger than the node."""
    if app.pinned_node is not None and app.pinned_node != node.name:
        return False
    if any(node.labels.get(key) != value for key, value in app.node_selector):
        return False
    if app.gpus > node.gpus:
        return False
    if node.cpu_millicores is not None and app.cpu_millicores > node.cpu_millicores:
        return False
    return node.memory_bytes is None or app.memory_bytes <= node.memory_bytes


def plan_score(apps: Sequence[App], assignment: Sequence[Sequence[int]], node_count: int) -> float:
    """Sum over nodes of pairwise dot products of the residents' profiles (score), by the pair formula."""
    residents: list[list[int]] = [[] for _ in range(node_count)]
    for app_index, replicas in enumerate(assignment):
        for node_index in replicas:
            residents[node_index].append(app_index)
    total = 0.0
    for members in residents:
        for i, left in enumerate(members):
            for right in members[i + 1:]:
                total += sum(a * b for a, b in zip(apps[left].profile, apps[right].profile, strict=True))
    return total


def reference_search(apps: Sequence[App], nodes: Sequence[Node], moves: int, seed: int = 7) -> list[list[int]]:
    """Simulated annealing with `moves` proposals; returns per app the node index of each replica.

    Raises RuntimeError when its first-fit start finds no feasible plan.
    """
    rng = random.Random(seed)
    node_count = len(nodes)
    width = len(apps[0].profile) if apps else 0
    eligible = [[n.index for n in nodes if _eligible(app, n)] for app in apps]
    eligible_sets = [set(e) for e in eligible]
    cap_cpu = [_cap(n.cpu_millicores) for n in nodes]
    cap_memory = [_cap(n.memory_bytes) for n in nodes]
    cap_pods = [_cap(n.pods) for n in nodes]
    cap_gpus = [float(n.gpus) for n in nodes]
    spread = [max(1, math.ceil(app.replicas / max(1, len(eligible[app.index])))) for app in apps]
    cpu = [0.0] * node_count
    memory = [0.0] * node_count
    pods = [0.0] * node_count
    gpus = [0.0] * node_count
    load = [[0.0] * width for _ in range(node_count)]
    count: list[dict[int, int]] = [{} for _ in range(node_count)]

    def fits(app: App, node: int, leaving: App | None = None) -> bool:
        out_cpu = leaving.cpu_millicores if leaving else 0
        out_memory = leaving.memory_bytes if leaving else 0
        out_gpus = leaving.gpus if leaving else 0
        return (
            pods[node] + (0 if leaving else 1) <= cap_pods[node]
            and cpu[node] + app.cpu_millicores - out_cpu <= cap_cpu[node]
            and memory[node] + app.memory_bytes - out_memory <= cap_memory[node]
            and gpus[node] + app.gpus - out_gpus <= cap_gpus[node]
            and count[node].get(app.index, 0) < spread[app.index]
        )

    def put(app: App, node: int, sign: int) -> None:
        cpu[node] += sign * app.cpu_millicores
        memory[node] += sign * app.memory_bytes
        pods[node] += sign
        gpus[node] += sign * app.gpus
        count[node][app.index] = count[node].get(app.index, 0) + sign
        row = load[node]
        for dim, value in enumerate(app.profile):
            row[dim] += sign * value

    # Feasible start: biggest requests first, each on the eligible node with the most CPU left.
    replica_app: list[int] = []
    node_of: list[int] = []
    order = sorted(range(len(apps)), key=lambda i: (-apps[i].cpu_millicores, -apps[i].memory_bytes, i))
    for app_index in order:
        app = apps[app_index]
        for _ in range(app.replicas):
            options = [n for n in eligible[app_index] if fits(app, n)]
            if not options:
                raise RuntimeError(f"reference search: first fit found no node for {app.name}")
            node = max(options, key=lambda n: (cap_cpu[n] - cpu[n], -n))
            put(app, node, 1)
            replica_app.append(app_index)
            node_of.append(node)
    members: list[list[int]] = [[] for _ in range(node_count)]
    for replica, node in enumerate(node_of):
        members[node].append(replica)

    def relocate(replica: int, target: int) -> None:
        app = apps[replica_app[replica]]
        source = node_of[replica]
        put(app, source, -1)
        put(app, target, 1)
        members[source].remove(replica)
        members[target].append(replica)
        node_of[replica] = target

    def sq(vector: Sequence[float]) -> float:
        return sum(v * v for v in vector)

    total = len(replica_app)
    mean_self = sum(sq(apps[a].profile) for a in replica_app) / max(1, total)
    start_temperature, end_temperature = 2.0 * mean_self, 0.01 * mean_self
    # Objective up to a constant: half the sum over nodes of |load|^2.
    current = sum(sq(row) for row in load) / 2
    best, best_nodes = current, list(node_of)
    temperature = start_temperature
    cooling = (end_temperature / start_temperature) ** (1000 / max(1, moves))
    for step in range(moves):
        if step % 1000 == 999:
            temperature *= cooling  # geometric, in steps of 1,000 moves
        replica = rng.randrange(total)
        app = apps[replica_app[replica]]
        source = node_of[replica]
        target = rng.choice(eligible[app.index])
        if target == source:
            continue
        before = (sq(load[source]) + sq(load[target])) / 2
        partner = None
        if rng.random() < 0.5 or not fits(app, target):
            if not members[target]:
                continue
            partner = rng.choice(members[target])
            other = apps[replica_app[partner]]
            if other.index == app.index or source not in eligible_sets[other.index]:
                continue
            if not (fits(app, target, leaving=other) and fits(other, source, leaving=app)):
                continue
            relocate(replica, target)
            relocate(partner, source)
        else:
            relocate(replica, target)
        delta = (sq(load[source]) + sq(load[target])) / 2 - before
        if delta > 1e-12 and rng.random() >= math.exp(-delta / temperature):
            relocate(replica, source)  # rejected: undo
            if partner is not None:
                relocate(partner, target)
            continue
        current += delta
        # Keep a copy of the best plan, checked every `total` steps so that
        # copying stays O(1) per move; the cold end of the run is compared too.
        if step % total == 0 and current < best - 1e-9:
            best, best_nodes = current, list(node_of)
    if current < best - 1e-9:
        best_nodes = list(node_of)
    assignment: list[list[int]] = [[] for _ in apps]
    for replica, node in enumerate(best_nodes):
        assignment[replica_app[replica]].append(node)
    return assignment

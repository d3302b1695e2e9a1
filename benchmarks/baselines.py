"""Placement policies the engine is measured against (benchmarks).

Both ignore constraints on purpose: they are what people did before.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ansible_collections.interference.orchestrator.plugins.module_utils.model import App


def alternating_assignment(apps: Sequence[App], node_count: int) -> list[list[int]]:
    """The seed service's policy: CPU-heavy and memory-heavy apps alternate between two nodes.

    Each new app of a type goes to the other of the first two nodes than the
    previous app of that type did; the service knew nothing of other nodes.
    Returns per app the node index of each replica.
    """
    nodes_used = min(2, node_count)
    next_node: dict[str, int] = {}
    assignment = []
    for app in apps:
        replicas = []
        for _ in range(app.replicas):
            node = next_node.get(app.type_label, 0)
            replicas.append(node)
            next_node[app.type_label] = (node + 1) % nodes_used
        assignment.append(replicas)
    return assignment


def random_assignment(apps: Sequence[App], node_count: int, seed: int = 0) -> list[list[int]]:
    """Every replica on a node drawn uniformly at random (seeded, so repeatable)."""
    rng = random.Random(seed)
    return [[rng.randrange(node_count) for _ in range(app.replicas)] for app in apps]


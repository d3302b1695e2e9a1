"""Bounded rebalancing: from the running placement, at most k single-replica moves, each the best one left.

`place(..., rebalance=True, max_moves=k)` keeps every replica where it runs
(as without `rebalance`), places new replicas as usual, then makes at most k
moves of running replicas. Each move relocates one replica to another node,
asked of the one feasibility check (feasibility.py: requests, pods, GPUs,
selectors, taints, pins, spread), and is the move that lowers the total
interference (score, sharing across nodes included) the most; it stops
earlier when no move lowers it. Ties go to the first app, replica and node in
input order, so the same input gives the same moves. An app pinned with
`node:` never moves: no other node passes the check.

Each step prices every running replica against every node: O(k x replicas x
nodes), meant for moving a few apps on a cluster, not for replanning 10,000.
`rebalance=True` without `max_moves` replans everything, as before.
"""

from __future__ import annotations

from typing import Any

from .feasibility import FITS
from .interference import EPSILON
from .model import App
from .search import _State

# The largest move limit taken (a whole number from 0 to this).
MAX_MOVES = 10_000


def best_move(state: _State, apps: list[App], assignment: list[list[int]],
              movable: list[tuple[int, int]]) -> tuple[float, int, int, int] | None:
    """(gain, app index, replica position, target node) of the move that lowers interference most, or None."""
    best: tuple[float, int, int, int] | None = None
    for app_index, position in movable:
        app = apps[app_index]
        vector = state.vectors[app_index]
        current = assignment[app_index][position]
        state.remove(app, current)
        staying = state.marginal(vector, current)
        for node_index in range(len(state.nodes)):
            if node_index == current or state.check(app_index, node_index) != FITS:
                continue
            gain = staying - state.marginal(vector, node_index)
            if gain > EPSILON and (best is None or gain > best[0] + EPSILON):
                best = (gain, app_index, position, node_index)
        state.add(app, current)
    return best


def bounded_moves(state: _State, apps: list[App], assignment: list[list[int]],
                  movable: list[tuple[int, int]], max_moves: int) -> list[dict[str, Any]]:
    """Make at most `max_moves` best moves of the `movable` replicas (app index, position) in place.

    Returns one entry per move: {'app', 'from', 'to', 'gain'} (node names;
    gain in score units, what the move took off the total).
    """
    moves: list[dict[str, Any]] = []
    while len(moves) < max_moves:
        found = best_move(state, apps, assignment, movable)
        if found is None:
            break
        gain, app_index, position, target = found
        app = apps[app_index]
        current = assignment[app_index][position]
        state.remove(app, current)
        state.add(app, target)
        assignment[app_index][position] = target
        moves.append({"app": app.name, "from": state.nodes[current].name, "to": state.nodes[target].name,
                      "gain": round(gain, 9)})
    return moves

"""Whether one more replica of an app may go on a node, and why not: the engine's one feasibility rule.

Every search of the engine (the greedy pass, the local search, the
annealing's relocations and swaps, the exact search) and the check of the
replicas kept from `previous` ask `Feasibility.check` (`check_swap` for a
swap, `reason` for the words); nothing else decides what fits.

Two parts, in kube-scheduler's order:
- `static_reject_reason`: what can never change during a run (a NotReady
  node, the `node` pin, `node_selector` labels, taints the app does not
  tolerate, a node that can never hold the request at all). It is
  evaluated once per distinct app shape when Feasibility builds the eligible
  node lists, so the hot loops only look up a set.
- the usage of the node now: pods, cpu, memory and GPUs requested so far
  against its capacity, and the spread cap (at most ceil(replicas / eligible
  nodes) replicas of one app per node); for a swap, of both replicas at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .model import App, Node
from .schema import untolerated

# A capacity the node does not state (None): larger than any sum of requests.
UNBOUNDED = 1 << 62


def static_reject_reason(app: App, node: Node) -> str | None:
    """Why the node can never take a replica of `app` (NotReady, pin, labels, taints, size), or None.

    As kube-scheduler filters: a taint with effect NoSchedule or NoExecute
    keeps the replica off unless one of the app's tolerations tolerates it;
    PreferNoSchedule does not.
    """
    if not node.ready:
        return "not ready"
    if app.pinned_node is not None and app.pinned_node != node.name:
        return f"not the pinned node {app.pinned_node}"
    for key, value in app.node_selector:
        if node.labels.get(key) != value:
            return f"missing label {key}={value}"
    taint = untolerated(app.tolerations, node.taints) if node.taints else None
    if taint is not None:
        key, value, effect = taint
        return f"untolerated taint {key}{'=' + value if value else ''}:{effect}"
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


# What `Feasibility.check` answers: FITS (0, false), or the first hard constraint the replica breaks.
FITS = 0
STATIC = 1  # the pin, a label, or a node too small ever to hold the request (static_reject_reason says which)
PODS = 2
CPU = 3
MEMORY = 4
GPUS = 5
SPREAD = 6
WORDS = {
    PODS: "too many pods", CPU: "insufficient cpu", MEMORY: "insufficient memory", GPUS: "insufficient nvidia.com/gpu",
}

Check = Callable[..., int]


class Feasibility:
    """The hard constraints of one placement, over the usage arrays the search updates in place.

    `cpu`, `memory`, `pods`, `gpus` (per node, requested so far) and
    `app_count` (per node, app index -> replicas there) are the search
    state's own lists, read at every call; `max_per_node` is the spread cap
    per app. `eligible` holds the nodes that pass `static_reject_reason` per
    app (one shared list per distinct answer), computed once here.

    `check(app, node)` is the rule, as a closure over plain lists that
    returns a code (FITS is 0), since the annealing calls it in its hot loop;
    `check_swap(app, node, other app, other node)` is the same rule for two
    replicas trading nodes (one call, as swaps are most of the annealing's
    checks); `reason(app, node)` says what `check` says in words.
    """

    def __init__(
        self,
        apps: Sequence[App],
        nodes: Sequence[Node],
        usage: tuple[list[int], list[int], list[int], list[int], list[dict[int, int]]],
    ) -> None:
        self.apps = apps
        self.nodes = nodes
        self._eligibility_cache: dict[tuple[Any, ...], list[int]] = {}
        self._placeable_cache: dict[tuple[Any, ...], tuple[list[int], float, float]] = {}
        self._interned: dict[tuple[int, ...], list[int]] = {}
        # Per app: the nodes that pass static_reject_reason (one shared list per distinct answer), the same
        # as a set (None: every node), and the spread cap, ceil(replicas / eligible nodes) per node.
        self.eligible: list[list[int]] = [self._eligible_nodes(app) for app in apps]
        sets: dict[int, set[int] | None] = {}
        for nodes_of_app in self.eligible:
            if id(nodes_of_app) not in sets:
                sets[id(nodes_of_app)] = None if len(nodes_of_app) == len(nodes) else set(nodes_of_app)
        self.eligible_set = [sets[id(nodes_of_app)] for nodes_of_app in self.eligible]
        self.max_per_node = [max(1, math.ceil(app.replicas / max(1, len(self.eligible[app.index])))) for app in apps]
        self.check, self.check_swap = self._checks(usage)

    def _eligible_nodes(self, app: App) -> list[int]:
        """The nodes that can ever take a replica of `app`, one shared list per distinct answer.

        The pin, labels, taints and GPUs are checked once per distinct combination;
        requests are then checked only when some of those nodes are smaller
        than the request, so apps that differ only in requests that fit every
        node cost nothing per node.
        """
        key = (app.pinned_node, app.node_selector, app.tolerations, app.gpus, app.cpu_millicores, app.memory_bytes)
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
        """Nodes matching the app's pin, labels, tolerations and GPUs, with their smallest cpu and memory (inf:
        unbounded)."""
        key = (app.pinned_node, app.node_selector, app.tolerations, app.gpus)
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

    def _checks(
        self, usage: tuple[list[int], list[int], list[int], list[int], list[dict[int, int]]]
    ) -> tuple[Check, Check]:
        apps, nodes, eligible_set, max_per_node = self.apps, self.nodes, self.eligible_set, self.max_per_node
        cap_cpu = [UNBOUNDED if n.cpu_millicores is None else n.cpu_millicores for n in nodes]
        cap_memory = [UNBOUNDED if n.memory_bytes is None else n.memory_bytes for n in nodes]
        cap_pods = [UNBOUNDED if n.pods is None else n.pods for n in nodes]
        cap_gpus = [n.gpus for n in nodes]
        req_cpu = [app.cpu_millicores for app in apps]
        req_memory = [app.memory_bytes for app in apps]
        req_gpus = [app.gpus for app in apps]
        cpu, memory, pods, gpus, app_count = usage

        def check(app_index: int, node_index: int) -> int:
            """FITS (0) when one more replica of app `app_index` may go to the node now, else what it breaks."""
            allowed = eligible_set[app_index]
            if allowed is not None and node_index not in allowed:
                return STATIC
            if pods[node_index] >= cap_pods[node_index]:
                return PODS
            if cpu[node_index] + req_cpu[app_index] > cap_cpu[node_index]:
                return CPU
            if memory[node_index] + req_memory[app_index] > cap_memory[node_index]:
                return MEMORY
            if gpus[node_index] + req_gpus[app_index] > cap_gpus[node_index]:
                return GPUS
            if app_count[node_index].get(app_index, 0) >= max_per_node[app_index]:
                return SPREAD
            return FITS

        def check_swap(app_index: int, node_index: int, other_app: int, other_node: int) -> int:
            """FITS (0) when a replica of `app_index` on `other_node` and one of `other_app` on `node_index` may
            trade places, else what the first of them breaks.

            The same rule as `check`, for both replicas at once: it answers
            what taking both off their nodes and then checking each on the
            other's node would (the pod counts do not change).
            """
            allowed = eligible_set[other_app]
            if allowed is not None and other_node not in allowed:
                return STATIC
            allowed = eligible_set[app_index]
            if allowed is not None and node_index not in allowed:
                return STATIC
            move_cpu = req_cpu[app_index] - req_cpu[other_app]
            if cpu[node_index] + move_cpu > cap_cpu[node_index] or cpu[other_node] - move_cpu > cap_cpu[other_node]:
                return CPU
            move_memory = req_memory[app_index] - req_memory[other_app]
            if (
                memory[node_index] + move_memory > cap_memory[node_index]
                or memory[other_node] - move_memory > cap_memory[other_node]
            ):
                return MEMORY
            move_gpus = req_gpus[app_index] - req_gpus[other_app]
            if (
                gpus[node_index] + move_gpus > cap_gpus[node_index]
                or gpus[other_node] - move_gpus > cap_gpus[other_node]
            ):
                return GPUS
            same = app_index == other_app
            if (
                app_count[node_index].get(app_index, 0) - same >= max_per_node[app_index]
                or app_count[other_node].get(other_app, 0) - same >= max_per_node[other_app]
            ):
                return SPREAD
            return FITS

        return check, check_swap

    def reason(self, app_index: int, node_index: int) -> str | None:
        """Why one more replica of app `app_index` cannot go to the node now, in words, or None if it can."""
        code = self.check(app_index, node_index)
        if code == FITS:
            return None
        app = self.apps[app_index]
        if code == STATIC:
            return static_reject_reason(app, self.nodes[node_index])
        if code == SPREAD:
            return f"already runs {self.max_per_node[app_index]} replica(s) of {app.name} (spread)"
        return WORDS[code]

"""Filter plugin: explain a placement (scores, lower bound, colliding pairs)."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place as compute_placement
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: placement_report
short_description: Explain the placement that interference.orchestrator.place computes
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Takes the same input as P(interference.orchestrator.place#filter) and returns how good the plan is and why.
  - The lower bound ignores every constraint, so no plan can score below it; when the plan meets it, or the exact
    search finished, RV(_value.proven_optimal) is true.
positional: nodes
extends_documentation_fragment:
  - interference.orchestrator.placement
  - interference.orchestrator.placement.search_effort
  - interference.orchestrator.placement.sharing
"""

EXAMPLES = r"""
- name: Show why the plan is what it is
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.placement_report(['worker1', 'worker2']) }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu}
      - {name: compress-7zip, image: pts/compress-7zip, type: cpu}
      - {name: blender, image: pts/blender, type: cpu}
"""

RETURN = r"""
_value:
  description: The placement report.
  type: dict
  contains:
    total_interference:
      description:
        - Sum over nodes of the interference of every pair of replicas there (score, no unit), plus with O(sharing)
          the pairs on different nodes of one group.
      type: float
    lower_bound:
      description: No feasible plan scores below this.
      type: float
    proven_optimal:
      description: True when the plan is known to be a minimum (it meets the bound, or the exact search finished).
      type: bool
    gap:
      description:
        - How far above RV(_value.lower_bound) the plan is, as a fraction of it (V(0.02) is 2%); an upper bound on
          the distance to the optimum. V(0) when the plan meets the bound; null when the bound is 0 and the plan
          is not.
      type: float
    method:
      description:
        - How the plan was found. V(greedy) (it met the bound at once), V(greedy+local-search) (single-replica
          moves after it), V(greedy+local-search+annealing) (then simulated annealing over relocations and swaps,
          see O(search_effort)) or V(exact) (branch and bound finished, so optimal).
      type: str
    nodes:
      description:
        - Per node, in input order, its C(name), the C(apps) placed there (one entry per replica), its
          C(interference) (the sum over every pair of replicas there) and C(interference_by_app), app name to the
          score of the pairs that app forms there (with the other apps and with its own other replicas).
      type: list
      elements: dict
    pairs:
      description:
        - The 20 worst pairs of apps that interfere, worst first, with C(node), C(apps), C(score) and C(reason).
          Bounded so the report stays small on any plan; RV(_value.pairs_not_listed) counts the others.
      type: list
      elements: dict
    pairs_not_listed:
      description: How many interfering pairs are not in RV(_value.pairs).
      type: int
    kept:
      description: Apps left where O(previous) had them.
      type: list
      elements: str
    moved:
      description: Replicas that could not stay where O(previous) had them, with C(app), C(from), C(to), C(reason).
      type: list
      elements: dict
    warning:
      description: The sentence naming colliding apps, or null for an interference-free plan.
      type: str
    sharing:
      description: With O(sharing) only, the label and the non-zero shares the plan was made with.
      type: dict
    cross_node_interference:
      description:
        - With O(sharing) only. The part of RV(_value.total_interference) from pairs of replicas on different nodes
          of one group; the per-node figures and RV(_value.pairs) hold the rest.
      type: float
    cross_node_pairs:
      description:
        - With O(sharing) only. The 20 worst pairs of apps on different nodes of one group, worst first, with
          C(group) (the label's value), C(nodes), C(apps) and C(score).
      type: list
      elements: dict
    cross_node_pairs_not_listed:
      description: With O(sharing) only. How many cross-node pairs are not in RV(_value.cross_node_pairs).
      type: int
"""


def placement_report(
    apps: list[dict[str, Any]],
    nodes: list[Any],
    previous: dict[str, Any] | None = None,
    rebalance: bool = False,
    search_effort: float = 1.0,
    *,
    sharing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the report of the plan `place` computes for the same input."""
    return run_engine(
        compute_placement, apps, nodes, previous=previous, rebalance=rebalance, search_effort=search_effort,
        sharing=sharing,
    ).report()


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"placement_report": placement_report}

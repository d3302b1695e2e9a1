"""Filter plugin: where each app's Job runs under each placement policy of the experiment."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import policy_plans
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: experiment_plans
short_description: Per placement policy, the node each app's Job runs on
version_added: 0.2.0
author: interference.orchestrator maintainers
description:
  - V(baseline) puts every app on the first node (each app runs alone there).
  - V(engine) is the plan of P(interference.orchestrator.place#filter) (first replica of each app).
  - V(alternating) is the seed service's policy - apps of each type alternate between the first two nodes.
  - V(scheduler) pins nothing, so kube-scheduler chooses (the value is null).
  - V(worst) puts the apps pressing on the same resource together on one node.
  - V(pair) (profiling) puts every app on the first node; the experiment runs the apps two at a time there.
  - Fails with a clear message on an unknown policy, bad apps, or fewer than two nodes for a policy that needs two.
positional: nodes, policies
options:
  _input:
    description: The apps, as for P(interference.orchestrator.place#filter).
    type: list
    elements: dict
    required: true
  nodes:
    description: Node names or node dicts (P(interference.orchestrator.nodes_from_k8s#filter)).
    type: list
    elements: raw
    required: true
  policies:
    description: Policies to plan, among V(baseline), V(engine), V(alternating), V(scheduler), V(worst), V(pair).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Plan the worst case and the engine's plan
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.experiment_plans(['w1', 'w2'], ['engine', 'worst']) }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu}
      - {name: mbw, image: pts/mbw, type: memory}
"""

RETURN = r"""
_value:
  description: Policy name to a dict app name -> node name (null when kube-scheduler chooses).
  type: dict
"""


def experiment_plans(apps: list[dict[str, Any]], nodes: list[Any], policies: list[str]) -> dict[str, Any]:
    """Policy -> app -> node (None for kube-scheduler's choice)."""
    return run_engine(policy_plans, apps, nodes, policies)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"experiment_plans": experiment_plans}

"""Filter plugin: what a rebalance reads from Prometheus - the hot nodes and the running apps' profiles."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.running import (
    held_by_budgets,
    hot_nodes,
    running_profiles,
    with_profiles,
)

DOCUMENTATION = r"""
name: rebalance_state
short_description: Hot nodes and running profiles from Prometheus's answers
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role's rebalance entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - C(hot_nodes) are the workers whose probe pressure, for some resource, stayed at or above O(threshold) for the
    whole window (the window's minimum reached it).
  - C(profiles) gives each app its share of its node's mean probe pressure, divided among the app pods there by
    their CPU use (cAdvisor), with the dominant resource as C(class).
  - C(planned) are the O(apps) items with that profile, as the engine plans with them; C(held) names the apps a
    PodDisruptionBudget allows no disruption of, which never move.
  - An app without a running pod, a CPU series or probe series on its node fails the run, naming the app and the
    query.
options:
  _input:
    description: The answers of Prometheus, query name (P(interference.orchestrator.rebalance_queries#filter)) to
      the JSON body.
    type: dict
    required: true
  apps:
    description: The app items of C(apps).
    type: list
    elements: dict
    required: true
  pods:
    description: The pods of the apps namespace (C(resources) of a M(kubernetes.core.k8s_info) lookup).
    type: list
    elements: dict
    required: true
  workers:
    description: The names of the workers the apps are placed on.
    type: list
    elements: str
    required: true
  threshold:
    description: The pressure (0 to 1) a node must hold for the whole window to be hot.
    type: float
    required: true
  budgets:
    description: The PodDisruptionBudgets of the apps namespace (C(resources) of a k8s_info lookup).
    type: list
    elements: dict
    default: []
  queries:
    description: The PromQL asked (P(interference.orchestrator.rebalance_queries#filter)), named in errors.
    type: dict
"""

EXAMPLES = r"""
- name: Read the state
  ansible.builtin.set_fact:
    state: >-
      {{ answers | interference.orchestrator.rebalance_state(apps=apps, pods=pods.resources,
                                                             workers=['w1', 'w2'], threshold=0.5) }}
"""

RETURN = r"""
_value:
  description: C(hot_nodes) (node to the resources held above the threshold), C(profiles) (per app C(profile),
    C(class), C(nodes), C(cpu_cores)), C(planned) (the app items with their running profiles) and C(held).
  type: dict
"""


def rebalance_state(
    answers: dict[str, Any], *, apps: list[dict[str, Any]], pods: list[dict[str, Any]], workers: list[str],
    threshold: float, budgets: list[dict[str, Any]] | None = None, queries: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Hot nodes, running profiles, the items to plan with and the apps held by a budget."""
    names = [str(app.get("name")) for app in apps]
    profiles = run_engine(running_profiles, answers, pods, names, promql=queries)
    return {
        "hot_nodes": run_engine(hot_nodes, answers, workers, float(threshold), queries),
        "profiles": profiles,
        "planned": with_profiles(apps, profiles),
        "held": held_by_budgets(budgets or [], pods, names),
    }


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"rebalance_state": rebalance_state}

"""Filter plugin: interference-aware placement of apps on nodes."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.placement import place as compute_placement
from ansible_collections.interference.orchestrator.plugins.module_utils.placement import placed_apps
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: place
short_description: Place apps on nodes so that apps stressing the same resource do not share a node
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Computes, for every replica of every app, the node it runs on, minimising total interference.
  - Interference of two replicas on one node is the dot product of their pressure profiles. C(type=cpu) is the
    profile C(cpu=1) and C(type=memory) is C(memory_bandwidth=1), so two apps of one type score 1 and two
    of different types score 0.
  - Hard constraints are resource requests against node allocatable (cpu, memory, pods, C(nvidia.com/gpu)),
    C(node_selector) labels, C(node) pins, and replicas of one app on distinct nodes when there are enough.
  - Ties are broken by balancing requested load; the same input always gives the same plan.
  - When no interference-free plan exists, returns the minimum-interference plan found; O(strict=true) makes that an
    error naming the colliding apps. The filter is pure and prints nothing; the warning naming the colliding apps is
    RV(interference.orchestrator.placement_report#filter:_value.warning), for the playbook to print (the apps role
    prints the one of P(interference.orchestrator.plan_apps#filter)).
  - Bad input fails with a message naming the app (and its index) and the field. The schema is strict (an unknown
    key is an error suggesting the closest field; names, labels, quantities and numbers follow Kubernetes' rules) and
    bounded (10,000 apps, 5,000 nodes, 10,000 replicas per app, 50,000 pods); see docs/apps.md.
  - Use P(interference.orchestrator.placement_report#filter) for scores, the lower bound and the colliding pairs.
positional: nodes
extends_documentation_fragment:
  - interference.orchestrator.placement
  - interference.orchestrator.placement.strict
  - interference.orchestrator.placement.search_effort
  - interference.orchestrator.placement.sharing
"""

EXAMPLES = r"""
- name: Place two CPU-bound and two memory-bound apps on two nodes
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.place(['worker1', 'worker2']) }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu}
      - {name: compress-7zip, image: pts/compress-7zip, type: cpu}
      - {name: mbw, image: pts/mbw, type: memory}
      - {name: stressapptest, image: pts/stressapptest, type: memory}

- name: Keep running apps where they are and place the new one around them
  ansible.builtin.set_fact:
    placed: "{{ apps | interference.orchestrator.place(nodes, previous={'c-ray': ['worker2']}) }}"
  vars:
    nodes:
      - {name: worker1, labels: {group: node1}, allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
      - {name: worker2, labels: {group: node2}, allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu, resources: {requests: {cpu: 500m, memory: 256Mi}}}
      - {name: mbw, image: pts/mbw, type: memory, node_selector: {group: node1}}
"""

RETURN = r"""
_value:
  description:
    - The apps in input order, each with an added C(nodes) list holding one node name per replica.
  type: list
  elements: dict
"""


def place(
    apps: list[dict[str, Any]],
    nodes: list[Any],
    previous: dict[str, Any] | None = None,
    rebalance: bool = False,
    strict: bool = False,
    *,
    search_effort: float = 1.0,
    sharing: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Return the apps, in order, each with `nodes` (one node name per replica)."""
    plan = run_engine(
        compute_placement, apps, nodes, previous=previous, rebalance=rebalance, strict=strict,
        search_effort=search_effort, sharing=sharing,
    )
    return placed_apps(apps, plan)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"place": place}

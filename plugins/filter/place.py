"""Filter plugin: interference-aware placement of apps on nodes."""

from __future__ import annotations

from typing import Any

from ansible.utils.display import Display
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
  - When no interference-free plan exists, returns the minimum-interference plan found and emits a warning
    naming the colliding apps; O(strict=true) makes that an error.
  - Bad input fails with a message naming the app (and its index) and the field. The schema is strict (an unknown
    key is an error suggesting the closest field; names, labels, quantities and numbers follow Kubernetes' rules) and
    bounded (10,000 apps, 5,000 nodes, 10,000 replicas per app, 50,000 pods); see docs/apps.md.
  - Use P(interference.orchestrator.placement_report#filter) for scores, the lower bound and the colliding pairs.
positional: nodes
options:
  _input:
    description:
      - The apps. Each is a dict with C(name) (DNS-1123 label), C(image), and C(type) (V(cpu) or V(memory), any
        case) or C(profile) (pressures from 0 to 1 over V(cpu), V(memory_bandwidth), V(llc), V(disk_io),
        V(network_io)).
      - Optional keys are C(replicas) (default 1), C(resources.requests.cpu) and C(resources.requests.memory)
        (Kubernetes quantities), C(gpus), C(node_selector) and C(node). Other keys are kept as they are.
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - Node names, or dicts C({name, labels, allocatable}) with allocatable C(cpu), C(memory), C(pods) and
        C(nvidia.com/gpu) as Kubernetes quantities (a missing one does not limit; missing GPUs mean none).
      - P(interference.orchestrator.nodes_from_k8s#filter) builds this list from M(kubernetes.core.k8s_info).
    type: list
    elements: raw
    required: true
  previous:
    description:
      - The current placement, app name to the list of its nodes, as read back from the cluster.
      - Every replica that still fits stays where it is, so adding an app never moves a running one.
      - Apps that are not in the input are ignored; a node that is not in O(nodes) is an error.
    type: dict
  rebalance:
    description: Ignore O(previous) and place every app afresh.
    type: bool
    default: false
  strict:
    description: Fail instead of warning when the plan still has interference.
    type: bool
    default: false
  search_effort:
    description:
      - Trades time for plan quality. After the greedy plan and its local search, a simulated annealing over
        relocations and swaps of replicas runs for a number of proposed moves derived from the instance size
        (about 1,000 per replica on small instances, at least 100 per replica on large ones), times this
        factor. It never depends on a clock, so the same input always gives the same plan.
      - V(0) turns the annealing off (greedy and local search only). V(10) searches about ten times as long.
      - The annealing is skipped when the plan is already within 1% / O(search_effort) of the lower bound, and
        when the exact search (up to 16 replicas to place) runs instead.
    type: float
    default: 1.0
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
) -> list[dict[str, Any]]:
    """Return the apps, in order, each with `nodes` (one node name per replica)."""
    plan = run_engine(
        compute_placement, apps, nodes, previous=previous, rebalance=rebalance, strict=strict,
        search_effort=search_effort,
    )
    warning = plan.warning()
    if warning:
        Display().warning(f"interference.orchestrator.place: {warning}")
    return placed_apps(apps, plan)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"place": place}

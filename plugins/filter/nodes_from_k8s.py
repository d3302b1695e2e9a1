"""Filter plugin: turn k8s_info Node resources into the placement engine's node list."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import nodes_from_k8s as convert
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: nodes_from_k8s
short_description: Node list for interference.orchestrator.place from kubernetes.core.k8s_info
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Takes the C(resources) of a M(kubernetes.core.k8s_info) lookup of kind Node and returns
    C({name, labels, allocatable}) per node, with allocatable C(cpu), C(memory), C(pods) and C(nvidia.com/gpu).
  - Cordoned nodes (C(spec.unschedulable)) are left out, as kube-scheduler leaves them out.
  - A malformed object fails naming its index in the input (C(resources[3])), its name and the field
    (C(metadata.labels)) and saying what is wrong, never with a Python error.
options:
  _input:
    description: The C(resources) list of a k8s_info result on Nodes.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Read the worker nodes
  kubernetes.core.k8s_info:
    kind: Node
    label_selectors: [group]
  register: worker_nodes

- name: Place the apps on them
  ansible.builtin.set_fact:
    placed: "{{ apps | interference.orchestrator.place(worker_nodes.resources | interference.orchestrator.nodes_from_k8s) }}"
"""

RETURN = r"""
_value:
  description: One dict per schedulable node with C(name), C(labels) and C(allocatable).
  type: list
  elements: dict
"""


def nodes_from_k8s(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the node dicts for the engine from k8s_info Node resources."""
    return run_engine(convert, resources)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"nodes_from_k8s": nodes_from_k8s}

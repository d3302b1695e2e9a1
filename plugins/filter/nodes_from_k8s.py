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
  - A node with taints gets C(taints) (C(key), C(value), C(effect) of each); the placement keeps apps off a
    V(NoSchedule) or V(NoExecute) taint unless the app tolerates it (C(tolerations)); V(PreferNoSchedule) does not
    block. A node whose C(Ready) condition is not V(True) gets C(ready=false); nothing is placed there, and the
    placement report says so.
  - Given O(pods), each node gets C(requested), what the pods bound to it that this collection does not manage
    request (C(cpu), C(memory), C(nvidia.com/gpu), and C(pods), their count), which the placement subtracts from
    C(allocatable). The app pods in O(managed_namespace) are not counted, as the plan places them. Pods without a
    node and finished pods (V(Succeeded), V(Failed)) are not counted; more than 150,000 pods is an error.
  - A malformed object fails naming its index in the input (C(resources[3])), its name and the field
    (C(metadata.labels)) and saying what is wrong, never with a Python error.
options:
  _input:
    description: The C(resources) list of a k8s_info result on Nodes.
    type: list
    elements: dict
    required: true
  pods:
    description: The C(resources) of a k8s_info on Pods, all namespaces (see the apps role's read_cluster.yml for a
      bounded query). Omitted, no C(requested) is added.
    type: list
    elements: dict
  managed_namespace:
    description: The namespace of the app Deployments (C(apps_namespace)); its pods labelled
      C(app.kubernetes.io/managed-by=interference.orchestrator) are the plan's own and are not counted.
    type: str
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
  description: One dict per schedulable node with C(name), C(labels) and C(allocatable), and C(taints),
    C(ready=false) and C(requested) when they apply.
  type: list
  elements: dict
"""


def nodes_from_k8s(
    resources: list[dict[str, Any]], pods: list[dict[str, Any]] | None = None, managed_namespace: str | None = None
) -> list[dict[str, Any]]:
    """Return the node dicts for the engine from k8s_info Node resources (and what other pods request there)."""
    return run_engine(convert, resources, pods, managed_namespace)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"nodes_from_k8s": nodes_from_k8s}

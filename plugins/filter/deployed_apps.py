"""Filter plugin: what the managed Deployments say about the current placement."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import deployed_apps as read
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: deployed_apps
short_description: Read the current placement and the unlisted apps from the managed Deployments
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Takes the C(resources) of a M(kubernetes.core.k8s_info) lookup of the Deployments the apps role manages.
  - C(previous) is each app's plan, read back from its C(interference.orchestrator/planned-nodes) annotation, with
    the nodes that are no longer in O(nodes) dropped; it is the O(interference.orchestrator.plan_apps#filter:previous)
    of the next plan, so running replicas stay where they are.
  - C(unlisted) are the app items (from the C(interference.orchestrator/app) annotation) of the Deployments whose
    app is not in O(listed).
positional: nodes, listed
options:
  _input:
    description: The C(resources) list of a k8s_info result on the managed Deployments.
    type: list
    elements: dict
    required: true
  nodes:
    description: Names of the nodes that can take pods now.
    type: list
    elements: str
    required: true
  listed:
    description: Names of the apps in the app list.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Read the Deployments the apps role manages
  kubernetes.core.k8s_info:
    api_version: apps/v1
    kind: Deployment
    namespace: interference-apps
    label_selectors: [app.kubernetes.io/managed-by=interference.orchestrator]
  register: managed

- name: Read the current placement from them
  ansible.builtin.set_fact:
    deployed: "{{ managed.resources | interference.orchestrator.deployed_apps(['worker1', 'worker2'],
                                                                               apps | map(attribute='name')) }}"
"""

RETURN = r"""
_value:
  description: The current state of the managed apps.
  type: dict
  contains:
    managed:
      description: Names of every managed Deployment.
      type: list
      elements: str
    previous:
      description: App name to the planned nodes still in O(nodes); apps with none left are left out.
      type: dict
    unlisted:
      description: The app items of the managed Deployments whose app is not in O(listed).
      type: list
      elements: dict
"""


def deployed_apps(deployments: list[dict[str, Any]], nodes: list[str], listed: list[str]) -> dict[str, Any]:
    """Return {managed, previous, unlisted} read from the managed Deployments."""
    return run_engine(read, deployments, list(nodes), list(listed))


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"deployed_apps": deployed_apps}

"""Filter plugin: the apps whose pods do not run where the plan put them."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.cluster_state import (
    placement_mismatches as compare,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: placement_mismatches
short_description: Name the apps whose pods do not run on their planned nodes
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Compares the pods of the managed apps (the C(resources) of a M(kubernetes.core.k8s_info) lookup) with the
    result of P(interference.orchestrator.plan_apps#filter).
  - An app matches when it has as many pods as planned replicas and they run on exactly the set of planned nodes.
    Pods being deleted do not count. Apps left to the scheduler extender are not checked.
positional: plan
options:
  _input:
    description: The C(resources) list of a k8s_info result on the pods of the managed apps.
    type: list
    elements: dict
    required: true
  plan:
    description: The result of P(interference.orchestrator.plan_apps#filter).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check that each app runs on exactly its planned nodes
  ansible.builtin.assert:
    that: mismatches | length == 0
    fail_msg: "Pods are not where the plan put them: {{ mismatches | join('; ') }}"
  vars:
    mismatches: "{{ pods.resources | interference.orchestrator.placement_mismatches(apps_plan) }}"
"""

RETURN = r"""
_value:
  description:
    - One sentence per app that does not match, e.g. C(web planned on w1, w2, runs on w1, w1).
    - Empty when every pod is where the plan put it.
  type: list
  elements: str
"""


def placement_mismatches(pods: list[dict[str, Any]], plan: dict[str, Any]) -> list[str]:
    """Return one sentence per pinned app whose pods are not on its planned nodes."""
    return run_engine(compare, plan, pods)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"placement_mismatches": placement_mismatches}

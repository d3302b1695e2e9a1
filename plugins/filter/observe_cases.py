"""Filter plugin: the pods of one observation repeat (an idle window, then each app alone on one worker)."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.observed import observe_cases
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: observe_cases
short_description: The pods of one observation repeat, as the isolation role runs them
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the isolation role's observe entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - First an idle window on O(node), then each app alone there, with its image (through O(image_refs)), its own
    C(command) (else O(command)) and C(args), its C(env), its CPU request (else O(cpu_request)) and memory limit
    (else O(memory_limit)).
positional: node
options:
  _input:
    description: The apps.
    type: list
    elements: dict
    required: true
  node:
    description: The worker every app runs on.
    type: str
    required: true
  image_refs:
    description: Image -> reference to run (the built images' tags).
    type: dict
    default: {}
  command:
    description: Command of an app that gives none.
    type: list
    elements: str
    required: true
  cpu_request:
    description: CPU request of an app that sets none.
    type: str
    required: true
  memory_limit:
    description: Memory limit of an app that sets none.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The pods of one repeat
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.observe_cases('kind-worker', command=['run-benchmark'], cpu_request='500m',
              memory_limit='768Mi') }}"
"""

RETURN = r"""
_value:
  description: Cases (C(stressor), C(node), C(pod), C(image), C(command), C(env), C(cpu_request), C(memory_limit));
    the first is the idle window (C(stressor) V(none)).
  type: list
  elements: dict
"""


def observe_cases_filter(apps: list[dict[str, Any]], node: str, **settings: Any) -> list[dict[str, Any]]:
    """The cases of one repeat."""
    return run_engine(observe_cases, apps, node, **settings)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"observe_cases": observe_cases_filter}

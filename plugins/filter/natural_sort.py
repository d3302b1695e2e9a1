"""Filter plugin: node names in natural order (worker, worker2, ..., worker10)."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.model import natural_sort as order
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: natural_sort
short_description: Sort node names as kind numbers its workers
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the node_labels role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Sorts by the name without its trailing number, then by that number, with a name without a number counting as 1.
    So C(cluster-worker) comes first, then C(cluster-worker2) ... C(cluster-worker10); a plain sort would put
    C(cluster-worker10) before C(cluster-worker2).
options:
  _input:
    description: The names.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Order the workers as kind numbers them
  ansible.builtin.debug:
    msg: "{{ ['w-worker10', 'w-worker2', 'w-worker'] | interference.orchestrator.natural_sort }}"
  # => ['w-worker', 'w-worker2', 'w-worker10']
"""

RETURN = r"""
_value:
  description: The names in natural order.
  type: list
  elements: str
"""


def natural_sort(names: list[str]) -> list[str]:
    """Return the names in natural order."""
    # Jinja's map() hands over a generator; a string stays a string, so the engine names the mistake.
    listed = names if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__") else list(names)
    return run_engine(order, listed)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"natural_sort": natural_sort}

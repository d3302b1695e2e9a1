"""Filter plugin: the PromQL queries of playbooks/rebalance.yml, its settings checked first."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.running import queries

DOCUMENTATION = r"""
name: rebalance_queries
short_description: The Prometheus queries a rebalance reads, for checked settings
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role's rebalance entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - Checks the settings first - C(threshold) above 0 and at most 1, C(window_s) a whole number of seconds from 20 to
    86,400, C(max_moves) a whole number from 0 to 100, C(namespace) given - and fails naming the setting.
  - Returns C(pressure_held) (the window's minimum of C(interference_probe_pressure)), C(pressure_mean) (its mean)
    and C(app_cpu) (the CPU use of each pod of the namespace, from cAdvisor).
options:
  _input:
    description: The settings, C(threshold), C(window_s), C(max_moves) and C(namespace).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the queries of a two-minute window
  ansible.builtin.debug:
    msg: "{{ {'threshold': 0.5, 'window_s': 120, 'max_moves': 1, 'namespace': 'interference-apps'}
             | interference.orchestrator.rebalance_queries }}"
"""

RETURN = r"""
_value:
  description: Query name to PromQL.
  type: dict
"""


def rebalance_queries(settings: dict[str, Any]) -> dict[str, str]:
    """The queries of plugin_utils/running.py for these settings."""
    return run_engine(queries, settings)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"rebalance_queries": rebalance_queries}

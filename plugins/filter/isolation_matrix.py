"""Filter plugin: the testbed's isolation matrices from playbooks/isolation.yml's results.json."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.isolation import matrices
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: isolation_matrix
short_description: Nodes x nodes matrices of the interference probe's pressure, one per stressor
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the isolation role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Row is the worker a stressor ran on, column the worker observed, value the mean over the window of the observed
    worker's probe pressure (0..1, no unit) of the stressor's resource.
  - Also the response of every resource to every stressor, the baseline run's means and the seconds until the
    stressed worker's pressure led every other by C(config.rise_margin) (default 0.2).
options:
  _input:
    description: The content of results.json (C(nodes), C(runs) with C(stressor), C(node), C(window), C(series)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Compute the matrices
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'results.json') | from_json) | interference.orchestrator.isolation_matrix }}"
"""

RETURN = r"""
_value:
  description: C(nodes), C(stressors), C(matrix), C(response), C(baseline), C(first_rise_s), C(rise_margin).
  type: dict
"""


def isolation_matrix(results: dict[str, Any]) -> dict[str, Any]:
    """Isolation matrices computed from results.json alone."""
    return run_engine(matrices, results)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"isolation_matrix": isolation_matrix}

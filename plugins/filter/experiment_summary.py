"""Filter plugin: slowdown per app and policy from an experiment's results.json."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import summarize
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: experiment_summary
short_description: Slowdown per app and placement policy from the raw runs of an experiment
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the experiment role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Slowdown (no unit) is the value under a policy over the app's median baseline value when lower is better,
    baseline over value when higher is better; 1 means as fast as alone.
  - Failed runs are counted in C(failed) and never turned into a figure.
options:
  _input:
    description: The content of results.json (a dict with C(runs)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Summarise a run
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'results.json') | from_json) | interference.orchestrator.experiment_summary }}"
"""

RETURN = r"""
_value:
  description:
    - C(rows) (per policy and app - n, median, min, max, failed), C(policies) (the same over all apps of a policy)
      and C(baselines) (per app - median value, unit, better, n).
  type: dict
"""


def experiment_summary(results: dict[str, Any]) -> dict[str, Any]:
    """Slowdown statistics per policy and app."""
    return run_engine(summarize, results)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"experiment_summary": experiment_summary}

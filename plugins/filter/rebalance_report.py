"""Filter plugin: the report of a rebalance, derived from its results.json alone."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.running import report

DOCUMENTATION = r"""
name: rebalance_report
short_description: The markdown report of a rebalance, from its results.json
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role's rebalance entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - Every figure is computed again from the stored answers of Prometheus, the pods and the plan - the nodes' held
    and mean pressure before (and after, when moves were applied), the hot nodes, the running profiles, the moves
    and the predicted interference before and after.
options:
  _input:
    description: The content of a rebalance's results.json.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the report of a stored rebalance
  ansible.builtin.copy:
    content: "{{ lookup('ansible.builtin.file', 'results.json') | from_json | interference.orchestrator.rebalance_report }}"
    dest: report.md
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The report, as markdown.
  type: str
"""


def rebalance_report(results: dict[str, Any]) -> str:
    """The report of plugin_utils/running.py."""
    return run_engine(report, results)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"rebalance_report": rebalance_report}

"""Filter plugin: the workload's RESULT line from a Job's log."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import (
    ExperimentError,
    parse_result_line,
)

DOCUMENTATION = r"""
name: experiment_result
short_description: Read the RESULT line a workload's run-benchmark printed
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the experiment role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Every workload image's C(run-benchmark) prints one line C(RESULT {json}) with C(value), C(better) and C(wall_seconds).
  - Never fails - a log without a valid RESULT line gives C(result=null) and the reason in C(error), so the run is recorded as failed.
options:
  _input:
    description: The Job's log (M(kubernetes.core.k8s_log) C(log)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Parse a log
  ansible.builtin.debug:
    msg: "{{ 'RESULT {\"value\": 2.0, \"better\": \"lower\", \"wall_seconds\": 2.1}' | interference.orchestrator.experiment_result }}"
"""

RETURN = r"""
_value:
  description: C(result) (the parsed JSON object or null) and C(error) (null, or why there is no result).
  type: dict
"""


def experiment_result(log: str) -> dict[str, Any]:
    """{result, error}: the parsed RESULT object, or None and the reason."""
    try:
        return {"result": parse_result_line(log), "error": None}
    except ExperimentError as exc:
        return {"result": None, "error": str(exc)}


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"experiment_result": experiment_result}

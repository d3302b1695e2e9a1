"""Filter plugin: one disjoint slice of the host's CPUs per kind worker."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.cpu_slices import (
    parse_cpu_list,
    worker_cpu_slices,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: cpu_slices
short_description: Split the host's CPUs into one disjoint slice per kind worker
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the kind_cluster role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Each worker gets the same number of consecutive CPUs (host CPUs // workers); the remainder is unused.
  - Returns an empty list when the host has fewer CPUs than workers, so no worker is isolated.
positional: workers
options:
  _input:
    description: The host's CPUs as a Linux cpulist, e.g. the content of C(/sys/devices/system/cpu/online) (C(0-3,8)).
    type: str
    required: true
  workers:
    description: Number of workers.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Two workers on a 4-CPU host get 0-1 and 2-3
  ansible.builtin.debug:
    msg: "{{ '0-3' | interference.orchestrator.cpu_slices(2) }}"
  # [{"cpus": "0-1", "reserved": "2-3"}, {"cpus": "2-3", "reserved": "0-1"}]
"""

RETURN = r"""
_value:
  description: Per worker, C(cpus) (its slice) and C(reserved) (every other host CPU), both cpulists.
  type: list
  elements: dict
"""


def cpu_slices(cpus: str, workers: int) -> list[dict[str, str]]:
    """Per worker {cpus, reserved}; [] when there are fewer CPUs than workers."""
    return run_engine(lambda: worker_cpu_slices(parse_cpu_list(cpus), int(workers)))


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"cpu_slices": cpu_slices}

"""Filter plugin: the apps a rebalance plan runs on other nodes, in the order of the engine's moves."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.running import moved_apps

DOCUMENTATION = r"""
name: rebalance_moves
short_description: The apps a plan moves, in the order of the engine's moves
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role's rebalance entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - Compares the planned nodes of every app the engine placed with where it runs (O(previous)); apps left to a
    scheduler are never counted.
positional: previous
options:
  _input:
    description: The result of P(interference.orchestrator.plan_apps#filter).
    type: dict
    required: true
  previous:
    description: App name to the nodes its replicas run on.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Name the moves
  ansible.builtin.debug:
    msg: "{{ plan | interference.orchestrator.rebalance_moves(apps_previous) }}"
"""

RETURN = r"""
_value:
  description: One C({app, from, to}) per moved app (node lists), in the order the engine moved them.
  type: list
  elements: dict
"""


def rebalance_moves(plan: dict[str, Any], previous: dict[str, Any]) -> list[dict[str, Any]]:
    """The moved apps of plan_apps' result against where they run."""
    return run_engine(moved_apps, plan, previous)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"rebalance_moves": rebalance_moves}

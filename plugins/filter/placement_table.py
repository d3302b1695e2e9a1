"""Filter plugin: the plan of plan_apps as the table the apps role prints."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_table import placement_table as table

DOCUMENTATION = r"""
name: placement_table
short_description: Print the result of interference.orchestrator.plan_apps as a table
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - One row per app and node, columns C(APP), C(TYPE), C(PROFILE), C(NODE) and C(INTERFERENCE), aligned. PROFILE
    is where the app's profile came from (O(sources); V(declared) for an app it does not name). INTERFERENCE is the sum
    of the scores of the pairs the app forms with other apps on that node (the report's C(interference_by_app));
    0 means no noisy neighbour.
  - Apps left to the scheduler extender (C(scheduler=extender)) or to the plugins build (C(scheduler=plugins)) get
    one row saying which scheduler chooses their nodes.
  - The last lines are the plan's warning, when there is one, and the total interference.
positional: scheduler_name
options:
  _input:
    description: The result of P(interference.orchestrator.plan_apps#filter).
    type: dict
    required: true
  scheduler_name:
    description: Name of the scheduler that places the apps left to the extender.
    type: str
    default: interference-scheduler
  plugins_scheduler_name:
    description: Name of the scheduler-framework plugins build that places the apps with C(scheduler=plugins).
    type: str
    default: gpu-scheduler
  sources:
    description: App name -> where its profile came from (P(interference.orchestrator.profile_sources#filter)).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Print the placement
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.plan_apps(['worker1', 'worker2'])
             | interference.orchestrator.placement_table }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu}
      - {name: mbw, image: pts/mbw, type: memory}
"""

RETURN = r"""
_value:
  description: The lines of the table, then the warning (if any) and the total interference.
  type: list
  elements: str
"""


def placement_table(
    plan: dict[str, Any], scheduler_name: str = "interference-scheduler", plugins_scheduler_name: str = "gpu-scheduler",
    sources: dict[str, str] | None = None,
) -> list[str]:
    """Return the table lines of a plan_apps result."""
    return table(plan, scheduler_name, plugins_scheduler_name, sources)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"placement_table": placement_table}

"""Filter plugin: observed profiles, their spread and repeats, from playbooks/observe.yml's results.json."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.observed import (
    cross_check,
    observed_profiles,
    profiles_file,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import pair_scores

DOCUMENTATION = r"""
name: observed_summary
short_description: Observed pressure profiles from the interference probe, one run per app
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the isolation role's observe entry point, not part of the collection's public interface; it may
    change or go without a deprecation period (docs/architecture.md, "Public surface").
  - Per app, the rise of the probe's pressure over the idle window of the same repeat - C(cpu) on the app's own
    worker, C(llc) and C(memory_bandwidth) the largest on any worker - then the median over repeats (the profile),
    the range (the spread), the number of repeats and a class (the dominant resource - V(cpu), or V(memory) for
    C(llc) or C(memory_bandwidth) - or V(idle) when no pressure reaches C(config.active_min)).
  - C(converged) is true when every app has C(config.min_repeats) repeats and every spread is at most
    C(config.spread_max).
options:
  _input:
    description: The content of results.json (C(nodes), C(runs) with C(stressor) (the app or V(none)), C(node),
      C(window), C(series), C(repeat)).
    type: dict
    required: true
  pairwise:
    description:
      - The results.json of a pairwise profiling run (playbooks/profile.yml), or nothing. Each measured pair's score
        is then set beside the dot product of the two observed profiles (C(cross_check)).
    type: dict
"""

EXAMPLES = r"""
- name: Compute the observed profiles
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'results.json') | from_json) | interference.orchestrator.observed_summary }}"
"""

RETURN = r"""
_value:
  description: C(apps) (per app C(profile), C(spread), C(repeats), C(class), C(rises), C(node)), C(converged),
    C(repeats), the settings used, and C(file) (what observed_profiles.yml holds).
  type: dict
"""


def observed_summary(results: dict[str, Any], pairwise: dict[str, Any] | None = None) -> dict[str, Any]:
    """Observed profiles computed from results.json alone, and the pairwise cross-check when given."""
    computed = run_engine(observed_profiles, results)
    summary = {**computed, "file": profiles_file(computed)}
    if pairwise:
        observed = summary["file"]["observed_profiles"]
        summary["cross_check"] = run_engine(cross_check, observed, run_engine(pair_scores, pairwise))
    return summary


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"observed_summary": observed_summary}

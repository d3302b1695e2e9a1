"""Filter plugin: pressure profiles fitted to measured pairwise slowdowns."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import fit_profiles as fit
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import pair_scores

DOCUMENTATION = r"""
name: fit_profiles
short_description: Fit the engine's pressure profiles to the slowdowns of apps run in pairs
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the experiment role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - A pair's score is the mean extra slowdown ((slowdown_a - 1) + (slowdown_b - 1)) / 2 of two apps on one node,
    median over repeats.
  - Finds profiles (entries from 0 to 1) whose dot products fit the scores in the least-squares sense, starting
    from the declared profiles; reports the fit error.
  - One score per pair, pairs only - see plugins/plugin_utils/profiling.py for the model's limits.
positional: apps
options:
  _input:
    description: The content of the profiling run's results.json (runs with policy V(baseline) and V(pair)).
    type: dict
    required: true
  apps:
    description: The apps that were profiled (their declared C(type) or C(profile) is the starting point).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Fit profiles to a profiling run
  ansible.builtin.debug:
    msg: "{{ results | interference.orchestrator.fit_profiles(apps) }}"
  vars:
    results: "{{ lookup('ansible.builtin.file', 'results.json') | from_json }}"
"""

RETURN = r"""
_value:
  description: C(profiles) (app -> resource -> pressure), C(rmse) and C(max_error) (score units), C(pairs) (pair, measured, fitted) and C(scores).
  type: dict
"""


def fit_profiles(results: dict[str, Any], apps: list[dict[str, Any]]) -> dict[str, Any]:
    """Measured profiles and the fit error."""
    scores = run_engine(pair_scores, results)
    return {**run_engine(fit, apps, scores), "scores": scores}


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"fit_profiles": fit_profiles}

"""Filter plugin: where each app's pressure profile comes from (the placement table's PROFILE column)."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import profile_sources

DOCUMENTATION = r"""
name: profile_sources
short_description: Where each app's pressure profile comes from
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - V(declared) for an app without C(profile_from) (its C(type) or C(profile)); V(measured) or V(observed) for an app
    whose C(profile_from) found a profile; V(declared (no observed)) for an app with C(profile_from=observed) that
    playbooks/observe.yml has not observed yet (it is placed by its declared C(type) or C(profile)).
  - The same rules as P(interference.orchestrator.measured_profiles#filter), which applies the profiles.
positional: profiles, observed
extends_documentation_fragment:
  - interference.orchestrator.placement.profile_sources
options:
  profiles:
    description: App name -> resource -> pressure (the C(measured_profiles) variable), or nothing.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Say where each app's profile comes from
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.profile_sources(measured_profiles, observed_profiles) }}"
"""

RETURN = r"""
_value:
  description: App name -> V(declared), V(measured), V(observed) or V(declared (no observed)).
  type: dict
"""


def profile_sources_filter(
    apps: list[dict[str, Any]], profiles: dict[str, Any] | None = None, observed: dict[str, Any] | None = None
) -> dict[str, str]:
    """App name -> the source of its profile."""
    return run_engine(profile_sources, apps, profiles or {}, observed or {})


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"profile_sources": profile_sources_filter}

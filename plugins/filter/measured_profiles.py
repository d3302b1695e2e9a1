"""Filter plugin: give the apps that opt in their measured pressure profile."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.profiling import apply_profiles

DOCUMENTATION = r"""
name: measured_profiles
short_description: Use the measured or observed pressure profile for apps with profile_from
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - An app with C(profile_from=measured) gets C(profile) from the measured profiles (written by playbooks/profile.yml
    into group_vars/all/measured_profiles.yml); its declared C(type) stays for labels and reports.
  - An app with C(profile_from=observed) gets C(profile) from the observed profiles (written by playbooks/observe.yml)
    when there is one, else keeps its declared C(type) or C(profile).
  - Apps without C(profile_from) are returned unchanged; an app with C(profile_from=measured) but no measured profile
    is an error naming it.
positional: profiles, observed
extends_documentation_fragment:
  - interference.orchestrator.placement.profile_sources
options:
  profiles:
    description: App name -> resource -> pressure (the C(measured_profiles) variable).
    type: dict
    required: true
    """

EXAMPLES = r"""
- name: Place with measured profiles
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.measured_profiles(measured_profiles) | interference.orchestrator.place(nodes) }}"
"""

RETURN = r"""
_value:
  description: The apps, those with C(profile_from=measured) carrying the measured C(profile).
  type: list
  elements: dict
"""


def measured_profiles(
    apps: list[dict[str, Any]], profiles: dict[str, Any], observed: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The apps with measured and observed profiles applied."""
    return run_engine(apply_profiles, apps, profiles, observed or {})


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"measured_profiles": measured_profiles}

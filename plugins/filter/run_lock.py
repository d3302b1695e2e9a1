"""Filter plugin: what a run does with the apps lock (a Lease) at one step."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine
from ansible_collections.interference.orchestrator.plugins.plugin_utils.run_lock import decide

DOCUMENTATION = r"""
name: run_lock
short_description: Decide whether a run takes, renews or releases the apps lock
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Takes the C(resources) of a M(kubernetes.core.k8s_info) lookup of the C(coordination.k8s.io/v1) Lease
    C(interference-orchestrator-apps) in the apps namespace (zero or one Lease).
  - The Lease is free when it is missing, has no holder, or expired (its C(renewTime) plus
    C(leaseDurationSeconds) is past). A Lease another run holds and renewed in time is refused, naming the holder
    and its age, unless O(break_lock) is set.
  - The Lease to write carries the C(resourceVersion) that was read, so a run that wrote in between makes the
    write a conflict.
positional: step, identity, now, duration, namespace, break_lock
options:
  _input:
    description: The C(resources) list of a k8s_info result on the Lease.
    type: list
    elements: dict
    required: true
  step:
    description: C(acquire), C(renew), C(verify) (the Lease read back after a write names this run) or C(release).
    type: str
    required: true
  identity:
    description: This run's holderIdentity.
    type: str
    required: true
  now:
    description: The current time, a MicroTime (C(2026-12-01T09:30:00.123456Z)).
    type: str
    required: true
  duration:
    description: Seconds the Lease stays valid after each renewal.
    type: int
    required: true
  namespace:
    description: Namespace of the Lease.
    type: str
    required: true
  break_lock:
    description: Take a Lease another run holds even when it has not expired.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read the run lock
  kubernetes.core.k8s_info:
    api_version: coordination.k8s.io/v1
    kind: Lease
    namespace: interference-apps
    name: interference-orchestrator-apps
  register: lease

- name: Decide whether this run may take it
  ansible.builtin.set_fact:
    verdict: "{{ lease.resources | interference.orchestrator.run_lock('acquire', 'me@host run 1a2b',
                 now(utc=true, fmt='%Y-%m-%dT%H:%M:%S.%fZ'), 600, 'interference-apps') }}"
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    write:
      description: The Lease to create or replace (with the resourceVersion read), or null.
      type: dict
    delete:
      description: The Lease to delete (release by its holder), or null.
      type: dict
    refuse:
      description: Why the run must stop (another holder, or the lock was lost), or empty.
      type: str
    message:
      description: One line for the log (a lock taken over or broken), or empty.
      type: str
"""


def run_lock(leases: list[dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Return {write, delete, refuse, message} for this run: plugin_utils.run_lock.decide, arguments as documented."""
    return run_engine(decide, list(leases), *args, **kwargs)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"run_lock": run_lock}

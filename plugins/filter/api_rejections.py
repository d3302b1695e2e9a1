"""Filter plugin: the apps whose Deployment the API server refused in a dry run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.api_rejections import (
    api_rejections as name_rejections,
)

DOCUMENTATION = r"""
name: api_rejections
short_description: Name the apps whose Deployment the API server refused in a dry run
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the apps role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Reads the registered result of a M(kubernetes.core.k8s) task that sent the apps' Deployments to the API server
    as a dry run (the task in check mode) with C(continue_on_error=true), so that every Deployment has a verdict.
  - >-
    Returns one sentence per refused Deployment, naming the app by its index and name in the app list and giving
    the server's reason per field, e.g. "apps[4] (web): refused by the API server: field
    'spec.template.spec.containers[0].securityContext.runAsUser': Invalid value: -5: must be between 0 and
    2147483647, inclusive."
positional: manifests, listed
options:
  _input:
    description: The registered result of the dry-run task.
    type: dict
    required: true
  manifests:
    description: The Deployments given to that task, in the same order.
    type: list
    elements: dict
    required: true
  listed:
    description: The names in the app list, in order; the index in a sentence is the position in this list.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Ask the API server to accept every Deployment (dry run)
  kubernetes.core.k8s:
    state: present
    apply: true
    definition: "{{ apps_manifests }}"
    continue_on_error: true
  check_mode: true
  changed_when: false
  register: dry_run

- name: Stop when the API server refuses a Deployment
  vars:
    refused: "{{ dry_run | interference.orchestrator.api_rejections(apps_manifests, apps | map(attribute='name')) }}"
  ansible.builtin.fail:
    msg: "{{ refused | join(' ') }}"
  when: refused | length > 0
"""

RETURN = r"""
_value:
  description: One sentence per refused Deployment; empty when the server accepts them all.
  type: list
  elements: str
"""


def api_rejections(dry_run: dict[str, Any], manifests: list[dict[str, Any]], listed: Iterable[str]) -> list[str]:
    """Return one sentence per Deployment the API server refused, naming its app."""
    return name_rejections(dry_run, manifests, [str(name) for name in listed])


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"api_rejections": api_rejections}

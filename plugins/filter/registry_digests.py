"""Filter plugin: pushed image references by the digest the registry gave them."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.image_refs import digest_references
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: registry_digests
short_description: Pushed image references by the digest the registry gave them
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the image_registry role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Maps each pushed reference C(<registry>/<name>:<tag>) to C(<registry>/<name>@sha256:<digest>), read from the
    C(RepoDigests) the Docker engine recorded when it pushed the image (the digest the registry answered), so a
    Deployment naming it runs exactly the pushed bytes, whatever later happens to the tag.
  - A reference the engine holds no digest for (not built yet, or never pushed to that repository, as in a check run
    before the first push) is left out; the caller keeps the tag for it.
positional: references
options:
  _input:
    description: Image details as community.docker.docker_image_info returns them (C(images)).
    type: list
    elements: dict
    required: true
  references:
    description: The pushed references (C(<registry>/<name>:<tag>)).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Name each pushed image by its digest
  ansible.builtin.set_fact:
    pushed_by_digest: "{{ info.images | interference.orchestrator.registry_digests(['reg.example.com/x/mbw:h-0123abcd4567']) }}"
"""

RETURN = r"""
_value:
  description: Pushed reference -> the same repository at the registry's digest (C(name@sha256:...)).
  type: dict
"""


def registry_digests(images: list[dict[str, Any]], references: list[str]) -> dict[str, str]:
    """Return each pushed reference found in `images` as <repository>@sha256:<digest>."""
    return run_engine(digest_references, images, references)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"registry_digests": registry_digests}

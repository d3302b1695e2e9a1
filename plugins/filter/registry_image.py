"""Filter plugin: the reference a locally built image is pushed as in the user's registry."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.image_refs import registry_reference
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: registry_image
short_description: The reference a locally built image is pushed as in the user's registry
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the pts_images, scheduler_extender, scheduler_plugins and cluster_provider roles, not part of the
    collection's public interface; it may change or go without a deprecation period (docs/architecture.md, "Public surface").
  - Returns C(<registry>/<last component of the image name>:<tag>), e.g. C(interference-orchestrator/povray:h-0123abcd4567)
    with registry C(123456789012.dkr.ecr.eu-west-1.amazonaws.com/interference) gives
    C(123456789012.dkr.ecr.eu-west-1.amazonaws.com/interference/povray:h-0123abcd4567).
  - An empty registry returns the image unchanged (nothing is pushed; kind loads local images).
  - Fails, naming what is wrong, on a registry given with a scheme (C(https://)), without a host (a name with a dot
    or a port, or C(localhost)), with an uppercase path, or on an image without a tag.
positional: registry
options:
  _input:
    description: A local image reference with a tag (C(name:tag)).
    type: str
    required: true
  registry:
    description: The registry and optional repository path (the project-wide C(images_registry)); empty for none.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Name the extender image in the user's registry
  ansible.builtin.set_fact:
    extender_ref: "{{ 'interference-extender:h-0123abcd4567' | interference.orchestrator.registry_image(images_registry) }}"
"""

RETURN = r"""
_value:
  description: The reference to push to and to put in the Deployments.
  type: str
"""


def registry_image(image: str, registry: str) -> str:
    """Return the reference `image` is pushed as in `registry` (unchanged when the registry is empty)."""
    return run_engine(registry_reference, image, registry)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"registry_image": registry_image}

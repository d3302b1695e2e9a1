"""Filter plugin: the content tag of an image, from the files it is built from."""

from __future__ import annotations

import os
from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.image_refs import content_tag as tag_of

DOCUMENTATION = r"""
name: content_tag
short_description: Tag an image by the files it is built from
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the pts_images, scheduler_extender and scheduler_plugins roles, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Returns O(prefix) and the first O(length) hex digits of a sha256 over these lines, joined by newlines
    (docs/architecture.md, "One content hash"), first one line C(<sha256> <name>) per entry of O(hashed) in the order
    given, then one line C(<sha256 of the file> <path relative to root>) per file, sorted by path, then the lines of
    O(extra) as they are.
  - An edited, added or renamed file gives a new tag, so the cluster runs the new build (a fixed tag would keep the
    old image on the nodes); an unchanged tree gives the same tag, so a rerun builds and pushes nothing.
  - Reads the files on the controller.
positional: root
options:
  _input:
    description: Paths of the files the image is built from.
    type: list
    elements: path
    required: true
  root:
    description: Folder the paths are made relative to (so the tag does not depend on where the checkout is).
    type: path
    required: true
  prefix:
    description: Text before the digits.
    type: str
    default: h-
  length:
    description: Hex digits kept.
    type: int
    default: 12
  hashed:
    description:
      - Files hashed elsewhere, name -> hex sha256, e.g. a large binary whose checksum M(ansible.builtin.stat) gave
        (it is then never read into memory). Their lines come first, in the order given.
    type: dict
    default: {}
  extra:
    description: What else the build depends on, one line each (the base image, the wheels' platforms, the workload).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Tag the extender image by its sources
  ansible.builtin.set_fact:
    extender_tag: >-
      {{ query('ansible.builtin.fileglob', repo_root ~ '/interference_extender/*.py')
         | interference.orchestrator.content_tag(repo_root, extra=['base python:3.11-slim']) }}

- name: Tag an image built from a binary checksummed by stat and two small files
  ansible.builtin.set_fact:
    scheduler_tag: >-
      {{ [root ~ '/Dockerfile', root ~ '/passwd']
         | interference.orchestrator.content_tag(root, hashed={'gpu-scheduler': binary_stat.stat.checksum}) }}
"""

RETURN = r"""
_value:
  description: The tag, e.g. C(h-0123abcd4567).
  type: str
"""


def content_tag(
    paths: list[str],
    root: str,
    prefix: str = "h-",
    length: int = 12,
    *,
    hashed: dict[str, str] | None = None,
    extra: list[str] | None = None,
) -> str:
    """Return the content tag of the files at `paths` (relative to `root`), `hashed` and `extra` lines."""
    if not isinstance(hashed or {}, dict):
        raise AnsibleFilterError(f"content_tag: hashed must be a mapping name -> sha256, got {type(hashed).__name__}")
    if not isinstance(extra or [], list):
        raise AnsibleFilterError(f"content_tag: extra must be a list of lines, got {type(extra).__name__}")
    real_root = os.path.realpath(root)
    files = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                files.append((os.path.relpath(os.path.realpath(path), real_root), handle.read()))
        except OSError as exc:
            raise AnsibleFilterError(f"content_tag: cannot read {path}: {exc.strerror}") from None
    return tag_of(files, prefix, int(length), hashed=list((hashed or {}).items()), extra=extra or [])


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"content_tag": content_tag}

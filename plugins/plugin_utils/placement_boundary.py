"""Where the placement engine meets Ansible: engine errors become Ansible errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError

Result = TypeVar("Result")


def run_engine(call: Callable[..., Result], *args: Any, **kwargs: Any) -> Result:
    """Call the engine; a PlacementError becomes an AnsibleFilterError with the same message."""
    try:
        return call(*args, **kwargs)
    except PlacementError as exc:
        raise AnsibleFilterError(str(exc)) from None

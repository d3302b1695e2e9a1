"""Exceptions raised by the placement engine.

Plugins turn these into Ansible errors at their boundary; the engine itself
never imports Ansible, so the scheduler extender and the benchmarks share it.
"""

from __future__ import annotations

# Characters of an item's name an error message shows before cutting it.
NAME_SHOWN_MAX = 253


class PlacementError(Exception):
    """Base class of every error the placement engine raises on purpose."""


class InputError(PlacementError):
    """An item of an input list is invalid; the message names the list, the item's index and name, and the field."""

    collection = "input"

    def __init__(self, index: int | None, name: object, field: str, problem: str) -> None:
        self.index = index
        self.name = name
        self.field = field
        self.problem = problem
        where = self.collection if index is None else f"{self.collection}[{index}]"
        if isinstance(name, str) and name:
            # A name that is itself the problem (a trailing newline, 10,000 characters) is shown quoted and cut.
            shown = name if name.isprintable() and len(name) <= NAME_SHOWN_MAX else repr(name[:NAME_SHOWN_MAX])
            if len(name) > NAME_SHOWN_MAX:
                shown += "..."
            where += f" ({shown})"
        super().__init__(f"{where}: field '{field}': {problem}")


class AppInputError(InputError):
    """An app item is invalid."""

    collection = "apps"


class NodeInputError(InputError):
    """The node list is invalid."""

    collection = "nodes"


class ClusterObjectError(InputError):
    """A k8s_info result is not what was asked for (Nodes, the managed Deployments or their pods)."""

    collection = "resources"


class PodObjectError(ClusterObjectError):
    """A Pod of the k8s_info result on the cluster's pods is malformed."""

    collection = "pods"


class UnschedulableError(PlacementError):
    """An app fits no node; the message gives the reason per node, kube-scheduler style."""

    def __init__(self, app: str, message: str) -> None:
        self.app = app
        super().__init__(message)


class InterferenceError(PlacementError):
    """Strict mode: the best plan found still puts interfering apps together."""

"""A process and everything it started, for tests that kill a run the way a crash would.

An ansible-playbook run with Mitogen's strategy forks a multiplexer that
calls setsid(): it leaves the run's process group, so killing the group
leaves it (and the interpreters it keeps warm, which may still be running a
task) behind, orphaned, until the machine stops. kill_tree finds the
descendants by their parent links in /proc first, then kills them all.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """The pids of every live descendant of `pid` (children, their children, ...), parents first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended while we looked
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after its last ')'.
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(text[: text.index(" ")]))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def kill_all(pids: list[int]) -> None:
    """SIGKILL each of `pids` that still runs."""
    for each in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, signal.SIGKILL)


def kill_tree(pid: int) -> list[int]:
    """SIGKILL `pid` and every descendant it has now, whatever their session; returns the descendants."""
    tree = descendants(pid)
    kill_all([pid, *tree])
    return tree

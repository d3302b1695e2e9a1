"""kill_tree kills what killing a process group misses: a child that left the group with setsid (as Mitogen's
multiplexer does), and that child's own children."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.processes import descendants, kill_all, kill_tree


def running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_left_the_group_outlives_killpg_but_not_kill_tree() -> None:
    # The parent starts a child in a session of its own, which starts a grandchild.
    script = "setsid bash -c 'sleep 300 & wait' & sleep 300"
    first = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    second = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    escaped: list[int] = []
    try:
        assert wait_until(lambda: len(descendants(first.pid)) >= 3 and len(descendants(second.pid)) >= 3)
        escaped = [pid for pid in descendants(first.pid) if os.getsid(pid) != first.pid]
        assert escaped, "the setsid child should have left the session"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert all(running(pid) for pid in escaped)  # what the kind test's killpg left behind

        tree = kill_tree(second.pid)
        second.wait()
        assert len(tree) >= 3
        assert wait_until(lambda: not any(running(pid) for pid in tree))
    finally:
        leftovers = [*escaped, *descendants(first.pid), *descendants(second.pid), first.pid, second.pid]
        kill_all([pid for pid in leftovers if running(pid)])

"""Where the integration tier's time went: seconds per test module and per xdist worker.

The tier runs a module per xdist group (tests/integration/conftest.py), so its
wall time is at least its longest module (the critical path) and at least the
busiest worker's total. `--durations` names slow tests one by one; this adds
them up per module, module-scoped fixtures included, and per worker, so a CI
log shows whether one module sets the length or every worker is busy to the end.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class Spent:
    """One test phase (setup, call or teardown) as a report gives it."""

    nodeid: str
    worker: str
    seconds: float


def module_of(nodeid: str) -> str:
    """`tests/integration/x.py::test[p]@group` -> `tests/integration/x.py`."""
    return nodeid.split("::", 1)[0]


def summary(spent: list[Spent], top: int = 12) -> list[str]:
    """Lines: the `top` modules by seconds (with their worker and test count), then each worker's total."""
    seconds: defaultdict[str, float] = defaultdict(float)
    tests: defaultdict[str, set[str]] = defaultdict(set)
    workers: defaultdict[str, set[str]] = defaultdict(set)
    per_worker: defaultdict[str, float] = defaultdict(float)
    for one in spent:
        module = module_of(one.nodeid)
        seconds[module] += one.seconds
        tests[module].add(one.nodeid)
        workers[module].add(one.worker)
        per_worker[one.worker] += one.seconds
    ranked = sorted(seconds, key=lambda name: (-seconds[name], name))
    lines = [f"{'seconds':>8}  {'tests':>5}  {'worker':<8} module"]
    for module in ranked[:top]:
        where = ",".join(sorted(workers[module]))
        lines.append(f"{seconds[module]:8.0f}  {len(tests[module]):5d}  {where:<8} {module}")
    if len(ranked) > top:
        rest = ranked[top:]
        lines.append(f"{sum(seconds[m] for m in rest):8.0f}  {sum(len(tests[m]) for m in rest):5d}  "
                     f"{'':<8} {len(rest)} other modules")
    lines.append("busy seconds per worker: " + ", ".join(f"{w} {per_worker[w]:.0f}" for w in sorted(per_worker)))
    return lines

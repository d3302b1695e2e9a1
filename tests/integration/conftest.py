"""How the integration tier is spread over pytest-xdist workers (`make integration`).

Much of this tier's time is spent waiting: on API servers, on kind nodes, on
ansible-playbook processes (three workers left the two cores idle 30% of the
time, measured with vmstat). So it runs on several workers (`-n`, with
`--dist loadgroup`), one test module per group: a module's module-scoped
cluster is made once, on one worker, as it is without xdist. The `kind`
modules that share the session's kind cluster (`shared_kind`) are one group,
so that cluster is made once, on one worker; a `kind` module with a cluster of
its own (the experiment's, made by site.yml) is a group of its own, so at most
two kind clusters run at once while the other workers take the kwok and
ansible-playbook modules. The kind groups go first: they are the longest, and
a long group started last would run alone at the end.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _pytest.nodeid import coerce_node_id

from tests.support import kind
from tests.support.time_spent import Spent, summary

KIND_GROUP = "kind"
SPENT: list[Spent] = []


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        shares_kind = item.get_closest_marker("kind") and "shared_kind" in getattr(item, "fixturenames", ())
        group = KIND_GROUP if shares_kind else module.__name__ if module else item.nodeid
        item.add_marker(pytest.mark.xdist_group(group))
        if config.getoption("loadgroup", default=False) and "@" not in item.nodeid.rsplit("]", 1)[-1]:
            # What xdist's own hook does with the marker, which pytest 9 undid: xdist 3.8
            # appends the group to `item._nodeid`, but pytest 9.2 reads node ids from
            # `item._id`, so every group was silently ignored and the tests spread one by one.
            item._id = coerce_node_id(f"{item.nodeid}@{group}")
    # Stable: within each part, the order collection (or pytest-randomly) gave.
    items.sort(key=lambda item: item.get_closest_marker("kind") is None)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every phase's seconds, on the controller too (xdist sends each worker's reports there)."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    SPENT.append(Spent(report.nodeid, getattr(gateway, "id", "main"), report.duration))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Where the time went, per module and per worker (tests/support/time_spent.py)."""
    if SPENT and not hasattr(terminalreporter.config, "workerinput"):
        terminalreporter.write_sep("=", "seconds per test module (setup, call, teardown) and per worker")
        for line in summary(SPENT):
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def shared_kind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kind.KindCluster]:
    """The one kind cluster of the kind modules that only need *a* kind cluster (made once, deleted at the end).

    Used by test_schedulers_kind.py (kube-system) and test_registry_existing_kind.py
    (interference-apps). test_experiment_kind.py keeps a cluster of its own: it
    needs workers on disjoint CPU sets. molecule's kind scenario makes its own
    too: it proves create and destroy.
    """
    cluster = kind.create(kind.SHARED_NAME, tmp_path_factory.mktemp("shared-kind"), kind.SHARED_WORKERS)
    try:
        yield cluster
    finally:
        cluster.delete()

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
from tests.support.strategy import strategy_env
from tests.support.time_spent import Spent, summary

KIND_GROUP = "kind"
SPENT: list[Spent] = []
# pytest-timeout counts a test's fixtures in its budget (pyproject's 1200 s), and a kind
# module's first test carries a cluster build (the shared one, or site.yml's own). On the
# project's CI host of 2026-12-03 the experiment's fixture took 834 s and its first test
# then timed out at 1200 s, 366 s into a run that had taken 543 s in a passing CI: a slow
# host, not a hang. A kind test without a budget of its own gets this one.
KIND_TIMEOUT = 2400


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        shares_kind = item.get_closest_marker("kind") and "shared_kind" in getattr(item, "fixturenames", ())
        group = KIND_GROUP if shares_kind else module.__name__ if module else item.nodeid
        item.add_marker(pytest.mark.xdist_group(group))
        if item.get_closest_marker("kind") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(KIND_TIMEOUT))
        if config.getoption("loadgroup", default=False) and "@" not in item.nodeid.rsplit("]", 1)[-1]:
            # What xdist's own hook does with the marker, which pytest 9 undid: xdist 3.8
            # appends the group to `item._nodeid`, but pytest 9.2 reads node ids from
            # `item._id`, so every group was silently ignored and the tests spread one by one.
            item._id = coerce_node_id(f"{item.nodeid}@{group}")
    # Within each module, the file's order: many modules are the steps of one scenario on one
    # module-scoped cluster (a first run, then a second that must change nothing, then an app
    # added, ...), so pytest-randomly (`make integration-random`, which reorders before this
    # hook) shuffles the modules only: what it shows is that no module depends on another's
    # order or leftovers, which is what the xdist groups rely on. In the random order of
    # 2026-12-03, test_apps_role_kwok.py's fresh-cluster check ran after a real run and
    # failed, as its steps must.
    keep_each_modules_file_order(items)
    # Stable: within each part, the order collection (or pytest-randomly) gave.
    items.sort(key=lambda item: item.get_closest_marker("kind") is None)


@pytest.fixture(scope="module", autouse=True)
def ansible_strategy(request: pytest.FixtureRequest) -> Iterator[None]:
    """The strategy of every ansible-playbook a module starts (tests/support/strategy.py says why).

    Mitogen's linear strategy for the modules that drive a cluster (marked
    `cluster` or `kind`): their site.yml runs have dozens of module tasks each,
    where a warm interpreter pays back its start-up. The others (roles rendered
    on localhost, a few tasks per run) keep Ansible's own, which starts faster.
    Autouse and module-scoped, so it is in place before the module's cluster
    fixtures run site.yml; xdist runs a worker's modules one at a time.
    """
    drives_a_cluster = any(request.node.get_closest_marker(name) for name in ("cluster", "kind"))
    with pytest.MonkeyPatch.context() as patch:
        for name, value in strategy_env(drives_a_cluster=drives_a_cluster).items():
            patch.setenv(name, value)
        yield


def keep_each_modules_file_order(items: list[pytest.Item]) -> None:
    """Put each module's tests back in the order of its file, in the places its tests hold now."""
    slots: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        slots.setdefault(str(item.path), []).append(index)
    placed = list(items)
    for indices in slots.values():
        # Line, then the node id: a parametrized test's cases share a line.
        in_file_order = sorted((items[i] for i in indices), key=lambda item: (item.location[1] or 0, item.nodeid))
        for index, item in zip(indices, in_file_order, strict=True):
            placed[index] = item
    items[:] = placed


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

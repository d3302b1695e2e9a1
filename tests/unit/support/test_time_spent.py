"""The integration tier's per-module time summary (tests/support/time_spent.py)."""

from __future__ import annotations

from tests.support.time_spent import Spent, module_of, summary


def test_module_of_drops_the_test_its_parameters_and_the_xdist_group() -> None:
    nodeid = "tests/integration/test_a.py::test_x[one]@tests.integration.test_a"
    assert module_of(nodeid) == "tests/integration/test_a.py"
    assert module_of("tests/integration/test_a.py") == "tests/integration/test_a.py"


def test_modules_are_summed_over_phases_and_tests_longest_first_with_each_workers_total() -> None:
    spent = [
        Spent("tests/integration/a.py::t1@a", "gw0", 100.0),  # setup: the module's cluster
        Spent("tests/integration/a.py::t1@a", "gw0", 20.0),
        Spent("tests/integration/a.py::t2@a", "gw0", 30.0),
        Spent("tests/integration/b.py::t1@b", "gw1", 200.0),
        Spent("tests/integration/c.py::t1@c", "gw0", 5.0),
    ]
    lines = summary(spent)
    assert lines[1].split() == ["200", "1", "gw1", "tests/integration/b.py"]
    assert lines[2].split() == ["150", "2", "gw0", "tests/integration/a.py"]
    assert lines[3].split() == ["5", "1", "gw0", "tests/integration/c.py"]
    assert lines[-1] == "busy seconds per worker: gw0 155, gw1 200"


def test_modules_past_the_top_are_one_line() -> None:
    spent = [Spent(f"tests/integration/m{i}.py::t", "main", float(i)) for i in range(1, 6)]
    lines = summary(spent, top=2)
    assert [line.split()[-1] for line in lines[1:3]] == ["tests/integration/m5.py", "tests/integration/m4.py"]
    assert lines[3].split() == ["6", "3", "3", "other", "modules"]

"""CPU slices of the kind workers."""

from __future__ import annotations

import pytest
from ansible_collections.interference.orchestrator.plugins.plugin_utils.cpu_slices import (
    CpuListError,
    format_cpu_list,
    parse_cpu_list,
    worker_cpu_slices,
)


def test_cpu_lists_round_trip() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert format_cpu_list([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"


@pytest.mark.parametrize("text", ["", "a-b", "3-1"])
def test_bad_cpu_lists_are_errors(text: str) -> None:
    with pytest.raises(CpuListError):
        parse_cpu_list(text)


def test_two_workers_on_two_cpus_get_one_each_and_reserve_the_other() -> None:
    assert worker_cpu_slices([0, 1], 2) == [{"cpus": "0", "reserved": "1"}, {"cpus": "1", "reserved": "0"}]


def test_slices_are_disjoint_and_equal_and_the_remainder_is_unused() -> None:
    slices = worker_cpu_slices(list(range(7)), 3)
    assert [s["cpus"] for s in slices] == ["0-1", "2-3", "4-5"]
    assert slices[0]["reserved"] == "2-6"


def test_fewer_cpus_than_workers_gives_no_slices() -> None:
    assert worker_cpu_slices([0, 1], 3) == []

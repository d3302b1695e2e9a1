"""RepeatedLogFilter: one traceback (or HTTP warning) per kind and interval, with the count of the others."""

from __future__ import annotations

import logging

from interference_extender.repeated_logs import HTTP_LOGGER, RepeatedLogFilter


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def failure(exc: BaseException) -> logging.LogRecord:
    """The record `LOG.exception("%s failed", "filter")` makes while `exc` is being handled."""
    exc_info = (type(exc), exc, exc.__traceback__)
    return logging.LogRecord("interference_extender", logging.ERROR, __file__, 1, "%s failed", ("filter",), exc_info)


def record(logger: str, level: int, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(logger, level, __file__, 1, msg, args, None)


def test_a_traceback_passes_once_per_interval_and_the_next_one_counts_the_others() -> None:
    clock = Clock()
    repeated = RepeatedLogFilter(interval=60, clock=clock)
    assert repeated.filter(failure(TypeError("x")))
    clock.now += 1
    assert [repeated.filter(failure(TypeError("y"))) for _ in range(3)] == [False, False, False]
    clock.now += 74
    after = failure(TypeError("z"))
    assert repeated.filter(after)
    assert after.getMessage() == "filter failed (3 more like this in the 75 s since the last one not logged)"
    assert after.exc_info is not None  # the traceback itself is still there
    clock.now += 1
    assert not repeated.filter(failure(TypeError("again")))


def test_each_exception_type_has_its_own_interval() -> None:
    repeated = RepeatedLogFilter(interval=60, clock=Clock())
    assert repeated.filter(failure(TypeError("x")))
    assert repeated.filter(failure(KeyError("x")))
    assert not repeated.filter(failure(KeyError("x")))


def test_http_warnings_are_limited_per_message_and_other_records_always_pass() -> None:
    repeated = RepeatedLogFilter(interval=60, clock=Clock())
    slow = "client %s too slow: request not read within %ss, dropped"
    assert repeated.filter(record(HTTP_LOGGER, logging.WARNING, slow, "10.0.0.1", 10))
    assert not repeated.filter(record(HTTP_LOGGER, logging.WARNING, slow, "10.0.0.2", 10))
    assert repeated.filter(record(HTTP_LOGGER, logging.WARNING, "another %s", "warning"))
    assert all(repeated.filter(record(HTTP_LOGGER, logging.INFO, "ended abruptly")) for _ in range(3))
    assert all(repeated.filter(record("interference_extender.view", logging.WARNING, slow, "a", 1)) for _ in range(3))

"""A logging filter that lets a repeated traceback or client warning through once per interval.

A request that trips a bug logs its traceback (about 1 KB); repeated by a
client in a loop, that fills a disk. The filter lets the first record of a
kind through, drops the same kind for `interval` seconds while counting, and
adds the count to the next one it lets through:

    ERROR interference_extender: filter failed (37 more like this in the 75 s since the last one not logged)

A kind is the exception type for a record with a traceback, and the logger
plus message template for a WARNING of the HTTP server (a slow client, say),
so one kind of trouble never hides another.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

HTTP_LOGGER = "interference_extender.http"
DEFAULT_INTERVAL_SECONDS = 60.0


class RepeatedLogFilter(logging.Filter):
    """Passes one record per kind and `interval` seconds; attach it to the handlers."""

    def __init__(self, interval: float = DEFAULT_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._passed_at: dict[Hashable, float] = {}
        self._dropped: dict[Hashable, int] = {}

    @staticmethod
    def kind(record: logging.LogRecord) -> Hashable | None:
        """What makes records repeats of each other; None for records always let through."""
        if record.exc_info and record.exc_info[0] is not None:
            return ("traceback", record.exc_info[0].__qualname__)
        if record.name == HTTP_LOGGER and record.levelno >= logging.WARNING:
            return ("http", str(record.msg))
        return None

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a repeat inside the interval; the first record after it carries the count."""
        kind = self.kind(record)
        if kind is None:
            return True
        with self._lock:
            now = self.clock()
            passed_at = self._passed_at.get(kind)
            if passed_at is not None and now - passed_at < self.interval:
                self._dropped[kind] = self._dropped.get(kind, 0) + 1
                return False
            self._passed_at[kind] = now
            dropped = self._dropped.pop(kind, 0)
        if dropped and passed_at is not None:
            # Formatted here, so a % in the note cannot meet the record's args.
            note = f"{dropped} more like this in the {now - passed_at:.0f} s since the last one not logged"
            record.msg = f"{record.getMessage()} ({note})"
            record.args = None
        return True

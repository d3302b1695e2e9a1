"""The extender's HTTP limits against misbehaving clients: real server, real sockets.

Each test starts a server with small limits so the case is reached in a
fraction of a second; no test measures time (the deadlines are checked by
what the server answers, with client timeouts far longer than the server's).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from interference_extender.__main__ import limits_from, parse_args
from interference_extender.facts import PodFacts
from interference_extender.policy import ExtenderPolicy
from interference_extender.repeated_logs import RepeatedLogFilter
from interference_extender.server import HEAD_LIMIT_BYTES, ExtenderHTTPServer, ServerLimits
from tests.support.extender_http import (
    CLIENT_TIMEOUT_SECONDS,
    address,
    call,
    connect,
    exchange,
    read_until_closed,
    running_server,
    split_answer,
)
from tests.support.k8s_objects import extender_args, make_node, make_pod

BODY = json.dumps(extender_args(make_pod("p", pod_type="cpu"), [make_node("a")], node_cache_capable=False)).encode()


def eventually(check: Callable[[], bool], what: str) -> None:
    """Poll `check` until true; fail naming `what` after CLIENT_TIMEOUT_SECONDS (for server threads to catch up)."""
    deadline = time.monotonic() + CLIENT_TIMEOUT_SECONDS
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def json_error(raw: bytes) -> tuple[int, dict[str, str], str]:
    """(status, headers, error message) of a raw answer whose body must be the JSON error object."""
    status, headers, body = split_answer(raw)
    assert headers["content-type"] == "application/json"
    error = json.loads(body)
    assert error["status"] == status
    assert isinstance(error["error"], str)
    assert error["error"]
    return status, headers, error["error"]


def post_head(length: int | str, *extra: str) -> bytes:
    lines = ["POST /filter HTTP/1.1", "Host: x", f"Content-Length: {length}", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# -- time


def test_a_client_sending_one_byte_a_second_is_dropped_at_the_deadline_while_healthz_answers() -> None:
    """A per-read timeout would wait forever (every read gets a byte within a second); the deadline does not."""
    request = post_head(len(BODY)) + BODY
    with (
        running_server(ServerLimits(request_timeout=2.5)) as server,
        socket.create_connection(address(server), timeout=CLIENT_TIMEOUT_SECONDS) as sock,
    ):
        sent = 0
        answer = b""
        sock.settimeout(1.0)  # the wait between two bytes
        while sent < len(request):
            sock.sendall(request[sent : sent + 1])
            sent += 1
            if sent == 1:
                assert call(server, "GET", "/healthz")[0] == 200
            try:
                answer = sock.recv(65536)
                break  # the server answered (and closes)
            except TimeoutError:
                continue
        sock.settimeout(CLIENT_TIMEOUT_SECONDS)
        answer += read_until_closed(sock)
    assert sent < 10, f"the server let the client send {sent} bytes, one a second"
    status, headers, error = json_error(answer)
    assert (status, headers["connection"]) == (408, "close")
    assert error == "request not received within 2.5s"


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() -> None:
    with running_server(ServerLimits(idle_timeout=0.3)) as server:
        conn = connect(server)
        try:
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            assert response.status == 200
            response.read()
            assert conn.sock is not None
            assert read_until_closed(conn.sock) == b""  # closed by the server, no answer to nothing
        finally:
            conn.close()


# -- connections and bodies in progress


@pytest.fixture
def two_connections() -> Iterator[ExtenderHTTPServer]:
    with running_server(ServerLimits(max_connections=2)) as server:
        yield server


def test_with_every_connection_taken_a_new_one_gets_503_at_once(two_connections: ExtenderHTTPServer) -> None:
    server = two_connections
    held = [connect(server), connect(server)]
    try:
        for conn in held:  # each answered once, so its thread holds a slot waiting for the next request
            conn.request("GET", "/healthz")
            assert conn.getresponse().read() == b"ok\n"
        # The client waits CLIENT_TIMEOUT_SECONDS; the idle connections would hold their slots 120 s.
        status, headers, error = json_error(exchange(server, post_head(len(BODY)) + BODY))
        assert (status, headers["connection"], headers["retry-after"]) == (503, "close", "1")
        assert error == "extender busy: 2 connections open; retry later"
        refused = server.service.metrics.registry.get_sample_value
        assert refused("interference_extender_refused_total", {"reason": "connections"}) == 1.0
        assert refused("interference_extender_refused_total", {"reason": "body_budget"}) == 0.0
    finally:
        held[0].close()
    eventually(lambda: call(server, "POST", "/filter", BODY)[0] == 200, "a freed slot serves the next connection")
    held[1].close()


def test_a_body_that_does_not_fit_the_budget_gets_503_before_it_is_read() -> None:
    limits = ServerLimits(max_body_bytes=1000, body_budget_bytes=1500, request_timeout=30)
    with running_server(limits) as server:
        with socket.create_connection(address(server), timeout=CLIENT_TIMEOUT_SECONDS) as slow:
            slow.sendall(post_head(1000))  # announces 1,000 bytes, sends none yet
            eventually(lambda: server.body_budget.used == 1000, "the announced body holds its bytes")
            small = b'{"Pod": {}, "NodeNames": []}' + b" " * 572  # 600 bytes: 1,600 > 1,500
            status, headers, error = json_error(exchange(server, post_head(len(small)) + small))
            assert (status, headers["retry-after"]) == (503, "1")
            assert error == "extender busy: 1500 bytes of request bodies in progress; retry later"
            assert call(server, "GET", "/healthz")[0] == 200  # no body, no budget
            slow.sendall(b"[" + b" " * 998 + b"]")
            status, _, body = split_answer(slow.recv(65536))
            error = "bad filter request: ExtenderArgs: expected a JSON object, got a list"
            assert (status, json.loads(body)["error"]) == (400, error)
        eventually(lambda: server.body_budget.used == 0, "the budget is given back after the answer")
        assert call(server, "POST", "/filter", small)[0] == 200


def test_limits_that_cannot_work_are_refused() -> None:
    with pytest.raises(ValueError, match=r"the body budget \(1000 bytes\) is smaller than the largest body"):
        ServerLimits(max_body_bytes=2000, body_budget_bytes=1000).check()
    with pytest.raises(ValueError, match="max_connections must be > 0, got 0"):
        ServerLimits(max_connections=0).check()


# -- framing


@pytest.fixture(scope="module")
def server() -> Iterator[ExtenderHTTPServer]:
    with running_server(ServerLimits(max_body_bytes=1000, body_budget_bytes=1000, request_timeout=5)) as running:
        yield running


@pytest.mark.parametrize(
    "lengths", [("2", "2"), ("2", "3"), ("2, 2",)], ids=["same twice", "two values", "one header, two values"]
)
def test_more_than_one_content_length_is_400(server: ExtenderHTTPServer, lengths: tuple[str, ...]) -> None:
    head = ["POST /filter HTTP/1.1", "Host: x", *(f"Content-Length: {value}" for value in lengths)]
    status, headers, error = json_error(exchange(server, ("\r\n".join(head) + "\r\n\r\n{}").encode()))
    assert (status, headers["connection"]) == (400, "close")
    assert error == (
        f"{len(lengths)} Content-Length headers; send exactly one" if len(lengths) > 1
        else "bad Content-Length '2, 2': expected a number of bytes"
    )


@pytest.mark.parametrize("length", ["+2", "2_0", "-1", "0x2", "2.0"])
def test_a_content_length_that_is_not_digits_is_400(server: ExtenderHTTPServer, length: str) -> None:
    status, _, error = json_error(exchange(server, post_head(length) + b"{}"))
    assert (status, error) == (400, f"bad Content-Length {length!r}: expected a number of bytes")


def test_a_chunked_body_is_411(server: ExtenderHTTPServer) -> None:
    raw = b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    status, _, error = json_error(exchange(server, raw))
    assert (status, error) == (411, "send the body with a Content-Length, not a Transfer-Encoding")


def test_an_oversized_body_sent_anyway_still_gets_its_413(server: ExtenderHTTPServer) -> None:
    # The body is never read; the server shuts its side and drains ours, so the
    # client reads the 413 instead of a connection reset.
    status, _, error = json_error(exchange(server, post_head(200_000) + b"x" * 200_000))
    assert (status, error) == (413, "request body of 200000 bytes is over the limit of 1000 bytes")


def test_headers_over_the_head_limit_are_431(server: ExtenderHTTPServer) -> None:
    padding = "".join(f"X-Padding-{i}: {'a' * 1000}\r\n" for i in range(HEAD_LIMIT_BYTES // 1000 + 2))
    raw = f"GET /healthz HTTP/1.1\r\nHost: x\r\n{padding}\r\n".encode()
    status, _, error = json_error(exchange(server, raw))
    assert (status, error) == (431, f"request line and headers are over {HEAD_LIMIT_BYTES} bytes")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /healthz HTTP/2.0\r\n\r\n", 505),
        (b"PATCH /filter HTTP/1.1\r\nConnection: close\r\n\r\n", 501),
        (b"GET /nothing HTTP/1.1\r\nConnection: close\r\n\r\n", 404),
        (b"GET /filter HTTP/1.1\r\nConnection: close\r\n\r\n", 405),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 431),
        (post_head(2, "Connection: close") + b"[]", 400),
    ],
    ids=["bad request line", "HTTP/2.0", "unknown method", "unknown path", "filter without POST", "long URL",
         "not ExtenderArgs"],
)
def test_every_error_answer_is_a_json_object(server: ExtenderHTTPServer, raw: bytes, status: int) -> None:
    assert json_error(exchange(server, raw))[0] == status


# -- a genuine bug


class BrokenPolicy(ExtenderPolicy):
    """A policy whose check fails inside the decision, as a bug in the extender would."""

    def decides_for(self, pod: PodFacts) -> bool:
        raise RuntimeError("a bug")


class CollectingHandler(logging.Handler):
    """Keeps the records that get through its filters."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_bug_costs_one_request_and_its_traceback_is_logged_once_per_interval() -> None:
    handler = CollectingHandler()
    handler.addFilter(RepeatedLogFilter(interval=3600))
    logger = logging.getLogger("interference_extender")
    logger.addHandler(handler)
    try:
        with running_server(ServerLimits(), policy=BrokenPolicy()) as server:
            answers = [call(server, "POST", "/prioritize", BODY) for _ in range(5)]
            assert call(server, "GET", "/healthz")[0] == 200
    finally:
        logger.removeHandler(handler)
    assert {(status, json.loads(body)["error"]) for status, _, body in answers} == {
        (500, "prioritize failed: RuntimeError: a bug")
    }
    assert [(r.getMessage(), r.exc_info is not None) for r in handler.records] == [("prioritize failed", True)]


def test_every_limit_option_sets_its_field_and_defaults_to_the_server_default() -> None:
    assert limits_from(parse_args([])) == ServerLimits()
    argv = ["--max-body-bytes", "100", "--body-budget-bytes", "200", "--max-connections", "3",
            "--timeout", "2.5", "--idle-timeout", "9"]
    assert limits_from(parse_args(argv)) == ServerLimits(
        max_body_bytes=100, body_budget_bytes=200, max_connections=3, request_timeout=2.5, idle_timeout=9.0
    )

"""The extender over HTTP: a real server on a free port, real sockets, bad input included."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from interference_extender.cluster_view import ClusterView
from interference_extender.server import ExtenderHTTPServer, ServerLimits
from tests.support.extender_http import (
    address,
    call,
    connect,
    exchange,
    read_until_closed,
    running_server,
    split_answer,
)
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise

MAX_BODY = 256 * 1024
REQUEST_TIMEOUT = 0.5  # seconds: the server drops a client whose request takes longer to arrive


@pytest.fixture(scope="module")
def server() -> Iterator[ExtenderHTTPServer]:
    view = ClusterView()
    view.replace_nodes(serialise([make_node("a"), make_node("b"), make_node("gpu", gpus=1)]))
    view.replace_pods(serialise([make_pod("c1", pod_type="cpu", node_name="a")]))
    limits = ServerLimits(max_body_bytes=MAX_BODY, body_budget_bytes=MAX_BODY, request_timeout=REQUEST_TIMEOUT)
    with running_server(limits, view) as running:
        yield running


def args_body(pod_name: str = "p", node_cache_capable: bool = True, **pod: Any) -> bytes:
    nodes = [make_node("a"), make_node("b"), make_node("gpu", gpus=1)]
    return json.dumps(extender_args(make_pod(pod_name, **pod), nodes, node_cache_capable)).encode()


def test_filter_and_prioritize_answer_in_the_extender_types(server: ExtenderHTTPServer) -> None:
    status, content_type, body = call(server, "POST", "/filter", args_body(gpus=1))
    assert (status, content_type) == (200, "application/json")
    result = json.loads(body)
    assert result["NodeNames"] == ["gpu"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"a", "b"}
    status, _, body = call(server, "POST", "/prioritize", args_body(pod_type="cpu"))
    assert status == 200
    assert json.loads(body) == [{"Host": "a", "Score": 0}, {"Host": "b", "Score": 10}, {"Host": "gpu", "Score": 10}]


def test_full_node_list_mode_over_http(server: ExtenderHTTPServer) -> None:
    status, _, body = call(server, "POST", "/filter", args_body(node_cache_capable=False))
    assert status == 200
    assert [n["metadata"]["name"] for n in json.loads(body)["Nodes"]["items"]] == ["a", "b", "gpu"]


def test_malformed_json_is_400_with_a_message(server: ExtenderHTTPServer) -> None:
    status, content_type, body = call(server, "POST", "/filter", b'{"Pod": {')
    assert (status, content_type) == (400, "application/json")
    assert json.loads(body)["error"].startswith("malformed JSON in the filter request")


def test_json_that_is_not_extender_args_is_400(server: ExtenderHTTPServer) -> None:
    status, _, body = call(server, "POST", "/prioritize", b'{"Pod": {"metadata": {}}}')
    assert status == 400
    error = "bad prioritize request: ExtenderArgs has neither Nodes nor NodeNames"
    assert json.loads(body) == {"status": 400, "error": error}


def test_unknown_node_is_a_failed_node_with_a_reason(server: ExtenderHTTPServer) -> None:
    body = json.dumps({"Pod": serialise(make_pod("p")), "NodeNames": ["a", "nowhere"]}).encode()
    status, _, answer = call(server, "POST", "/filter", body)
    result = json.loads(answer)
    assert status == 200
    assert result["NodeNames"] == ["a"]
    assert "nowhere" in result["FailedNodes"]["nowhere"]


def test_body_over_the_limit_is_413_without_reading_it(server: ExtenderHTTPServer) -> None:
    # Only the headers are sent: the server must answer from Content-Length alone.
    status, headers, body = split_answer(
        exchange(server, f"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n".encode())
    )
    assert (status, headers["connection"]) == (413, "close")
    assert json.loads(body)["error"] == f"request body of {MAX_BODY + 1} bytes is over the limit of {MAX_BODY} bytes"


def test_a_stalled_client_is_dropped_with_408_and_others_are_still_served(server: ExtenderHTTPServer) -> None:
    with socket.create_connection(address(server), timeout=10) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        # While that request hangs, another one is answered.
        assert call(server, "GET", "/healthz")[0] == 200
        # The server gives up on the stalled one, says so and closes the connection.
        status, headers, body = split_answer(read_until_closed(sock))
    assert (status, headers["connection"]) == (408, "close")
    assert json.loads(body)["error"] == f"request not received within {REQUEST_TIMEOUT}s"


def test_keep_alive_serves_several_requests_on_one_connection(server: ExtenderHTTPServer) -> None:
    conn = connect(server)
    try:
        for _ in range(3):
            conn.request("POST", "/prioritize", body=args_body(pod_type="memory"))
            response = conn.getresponse()
            assert response.status == 200
            response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/filter", 405),
        ("GET", "/bind", 405),
        ("GET", "/preempt", 404),
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 200),
    ],
)
def test_routes(server: ExtenderHTTPServer, method: str, path: str, status: int) -> None:
    assert call(server, method, path)[0] == status


def test_metrics_count_requests_and_latency_per_verb(server: ExtenderHTTPServer) -> None:
    call(server, "POST", "/filter", args_body())
    call(server, "POST", "/filter", b"not json")
    status, content_type, body = call(server, "GET", "/metrics")
    text = body.decode()
    assert status == 200
    assert content_type.startswith("text/plain")
    assert 'interference_extender_requests_total{code="400",verb="filter"}' in text
    assert 'interference_extender_request_duration_seconds_bucket{le="0.02",verb="filter"}' in text
    assert 'interference_extender_request_duration_seconds_count{verb="prioritize"}' in text
    assert "interference_extender_view_pods 1.0" in text
    assert "interference_extender_view_nodes 3.0" in text

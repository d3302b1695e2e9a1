"""The extender's HTTP server in-process on a free port, and clients that speak to it as HTTP or as raw bytes.

Real sockets on 127.0.0.1, the server on its own threads, so the tests see
exactly what kube-scheduler (or a hostile client) would.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from interference_extender.cluster_view import ClusterView
from interference_extender.policy import ExtenderPolicy
from interference_extender.server import ClientAuth, ExtenderHTTPServer, ServerLimits, serve
from interference_extender.service import ExtenderService

CLIENT_TIMEOUT_SECONDS = 10.0


@contextmanager
def running_server(
    limits: ServerLimits,
    view: ClusterView | None = None,
    policy: ExtenderPolicy | None = None,
    tls: ClientAuth | None = None,
) -> Iterator[ExtenderHTTPServer]:
    """A server with these limits on a free port of 127.0.0.1, serving until the block ends (HTTPS with `tls`)."""
    service = ExtenderService(view or ClusterView(), policy or ExtenderPolicy())
    server = serve(service, "127.0.0.1", 0, limits, tls)
    # A short poll interval: shutdown() waits for it, once per test.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="extender-under-test", daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def address(server: ExtenderHTTPServer) -> tuple[str, int]:
    """(host, port) the server listens on."""
    host, port = server.server_address[:2]
    return str(host), int(port)


def connect(server: ExtenderHTTPServer) -> http.client.HTTPConnection:
    """A keep-alive client connection (not yet connected)."""
    return http.client.HTTPConnection(*address(server), timeout=CLIENT_TIMEOUT_SECONDS)


def call(
    server: ExtenderHTTPServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str, bytes]:
    """One request on a connection of its own: (status, content type, body)."""
    conn = connect(server)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def exchange(server: ExtenderHTTPServer, data: bytes) -> bytes:
    """Send raw bytes on a new connection, then read everything until the server closes it."""
    with socket.create_connection(address(server), timeout=CLIENT_TIMEOUT_SECONDS) as sock:
        sock.sendall(data)
        return read_until_closed(sock)


def read_until_closed(sock: socket.socket) -> bytes:
    """Every byte the server sends until it closes the connection."""
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def split_answer(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body) of one raw HTTP/1.1 answer."""
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body

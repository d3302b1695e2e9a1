"""HTTP/1.1 server of the extender on the standard library's ThreadingHTTPServer.

kube-scheduler keeps a few keep-alive connections to the extender and sends
one request at a time on each; a thread per connection serves that with no
event loop and no dependency. Two limits keep a bad client from hurting it:
a body larger than `max_body_bytes` is refused with 413 before it is read,
and every socket read or write times out after `timeout` seconds (a client
that stops sending in the middle of a request is dropped, never waited for).
"""

from __future__ import annotations

import logging
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .service import ExtenderService, Response, _text

LOG = logging.getLogger("interference_extender.http")


class ExtenderHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer carrying the service and its limits."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], service: ExtenderService, max_body_bytes: int, timeout: float
    ) -> None:
        self.service = service
        self.max_body_bytes = max_body_bytes
        self.io_timeout = timeout
        super().__init__(address, ExtenderRequestHandler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away mid-request is routine: one log line, not a traceback on stderr."""
        LOG.info("connection from %s ended abruptly", client_address[0] if client_address else "?")


class ExtenderRequestHandler(BaseHTTPRequestHandler):
    """Reads one request, hands it to the service, writes the answer."""

    protocol_version = "HTTP/1.1"  # keep-alive, as kube-scheduler's Go client expects
    server: ExtenderHTTPServer
    server_version = "interference-extender"
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, filled by send_response/send_header

    def setup(self) -> None:
        # Socket timeout for every read and write on this connection (seconds).
        self.timeout = self.server.io_timeout  # type: ignore[misc]
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, response: Response, close: bool = False) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        # Headers and body in one write (end_headers() would send the headers on
        # their own): one segment per answer, so the client never waits on a
        # delayed ACK between the two.
        buffered: list[bytes] = self._headers_buffer
        head = b"".join([*buffered, b"\r\n"])
        self._headers_buffer = []
        self.wfile.write(head if self.command == "HEAD" else head + response.body)

    def _read_body(self) -> bytes | None:
        """The request body, or None after answering 411/413/400 (and closing)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self._send(_text(411, "send the body with a Content-Length, not chunked"), close=True)
            return None
        raw_length = self.headers.get("Content-Length")
        if raw_length is None:
            return b""
        try:
            length = int(raw_length)
        except ValueError:
            self._send(_text(400, f"bad Content-Length {raw_length!r}"), close=True)
            return None
        if length < 0:
            self._send(_text(400, f"bad Content-Length {raw_length!r}"), close=True)
            return None
        if length > self.server.max_body_bytes:
            # Not read: the connection is closed instead, so the body is never buffered.
            self._send(
                _text(413, f"request body of {length} bytes is over the limit of {self.server.max_body_bytes} bytes"),
                close=True,
            )
            return None
        return self.rfile.read(length)

    def _handle(self) -> None:
        try:
            body = self._read_body() if self.command == "POST" else b""
            if body is None:
                return
            self._send(self.server.service.answer(self.command, self.path, body))
        except TimeoutError:
            LOG.warning("client %s too slow: dropped after %ss", self.client_address[0], self.server.io_timeout)
            self.close_connection = True

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s - %s", self.address_string(), format % args)


def serve(service: ExtenderService, host: str, port: int, max_body_bytes: int, timeout: float) -> ExtenderHTTPServer:
    """Bind the server (port 0 picks a free one); call serve_forever() on the result."""
    return ExtenderHTTPServer((host, port), service, max_body_bytes, timeout)

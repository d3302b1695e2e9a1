"""HTTP/1.1 server of the extender: the standard library's ThreadingHTTPServer, with limits.

kube-scheduler keeps a keep-alive connection or two to the extender and sends
one request at a time on each; a thread per connection serves that with no
event loop and no dependency. The limits keep any other client (a bug, a
scan, a hostile pod) from taking the service down with it:

- connections: at most `max_connections` are served at once, a thread each;
  the one over is answered 503 by the accepting thread without a thread of
  its own, so the thread count stays bounded whatever the load.
- bodies: the request bodies being read or decided at once hold at most
  `body_budget_bytes` between them (by their Content-Length); a POST whose
  body does not fit gets 503 before it is read. Memory for requests stays
  under body_budget_bytes x the parse overhead, however the budget is split
  (docs/extender.md has the arithmetic and the figures): many small
  nodeCacheCapable bodies at once, or one large full node list.
- time: a request has `request_timeout` seconds in all from its first byte to
  the last byte of its body, not per read (a client sending a byte a second is
  dropped on time), and as long again to take its answer; a keep-alive
  connection with no request for `idle_timeout` is closed.
- size: the request line and headers at most HEAD_LIMIT_BYTES (431), the body
  at most `max_body_bytes`, refused with 413 from its Content-Length alone;
  two Content-Length headers are a 400 (the classic request-smuggling shape),
  a chunked body 411.

Every error answer is a JSON object {"status": ..., "error": ...}. A
connection refused before its request was read is closed gracefully (its
input drained for up to LINGER_SECONDS), so the client reads the answer
instead of a reset.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import Counter

from .service import ExtenderService, Response, _text

LOG = logging.getLogger("interference_extender.http")

# Request line plus headers (bytes): kube-scheduler sends about 200.
HEAD_LIMIT_BYTES = 64 * 1024
# How long a refused connection may keep sending before it is closed (seconds).
LINGER_SECONDS = 2.0
# Refused connections drained at once; beyond that the oldest is closed at once.
MAX_LINGERING = 1024
# Pending connections the kernel queues for accept(): a burst of clients waits
# there rather than retrying its SYN after 1, 3, 7 seconds.
LISTEN_BACKLOG = 1024
# Label values of interference_extender_refused_total.
REFUSAL_REASONS = (
    "connections", "body_budget", "deadline", "body_too_large", "head_too_large", "bad_request",
    "tls_handshake", "unauthenticated",
)
# The paths only the scheduler may call when TLS is on (the probes and /metrics take no client certificate).
SCHEDULER_PATHS = frozenset({"/filter", "/prioritize", "/bind"})
# Memory (docs/extender.md, Memory; measured with benchmarks/extender_overload.py memory):
# peak resident bytes per byte of request body, decoded, decided and answered, for
# the worst body shape found (lists of one empty list, `[[]],`: 38.9); kubelet-like
# Node lists take 6.8.
PARSE_OVERHEAD = 40
# The interpreter, the kubernetes client and a testbed-sized view, before any request.
BASE_BYTES = 100 * 1024 * 1024
# One connection: its thread's stack in use, the read buffer, the head at its limit.
PER_CONNECTION_BYTES = 256 * 1024


@dataclass(frozen=True)
class ClientAuth:
    """HTTPS with client certificates: who may call filter, prioritize and bind.

    `context` is a server SSLContext that verifies a client certificate when
    one is sent (CERT_OPTIONAL: the kubelet's probes send none); the
    scheduler's certificate must chain to the role's CA and name one of
    `client_names` (its subject's commonName) for SCHEDULER_PATHS.
    """

    context: ssl.SSLContext
    client_names: frozenset[str]


def client_auth(cert: str, key: str, client_ca: str, client_names: frozenset[str]) -> ClientAuth:
    """The TLS settings of the extender: its certificate and key, the CA its callers' certificates chain to."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.load_verify_locations(cafile=client_ca)
    context.verify_mode = ssl.CERT_OPTIONAL
    return ClientAuth(context, frozenset(client_names))


def _common_names(peer: Any) -> set[str]:
    """The commonName values of a certificate's subject, as SSLSocket.getpeercert() returns it."""
    names: set[str] = set()
    for rdn in (peer or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                names.add(value)
    return names


@dataclass(frozen=True)
class ServerLimits:
    """What the clients may take from the server (see the module docstring); sizes in bytes."""

    max_body_bytes: int = 8 * 1024 * 1024
    body_budget_bytes: int = 8 * 1024 * 1024  # at least max_body_bytes, or the largest body never fits
    max_connections: int = 32
    request_timeout: float = 10.0  # seconds, first byte of a request to the end of its body
    # Seconds a keep-alive connection may wait for its next request. Longer than
    # the 90 s after which kube-scheduler's Go client drops an idle connection,
    # so the client always closes first: a POST on a connection the server has
    # just closed is an error for Go (POSTs are not retried), not a retry.
    idle_timeout: float = 120.0

    def check(self) -> None:
        """Raise ValueError naming the limit that cannot work."""
        for name in ("max_body_bytes", "body_budget_bytes", "max_connections", "request_timeout", "idle_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.body_budget_bytes < self.max_body_bytes:
            raise ValueError(
                f"the body budget ({self.body_budget_bytes} bytes) is smaller than the largest body "
                f"accepted ({self.max_body_bytes} bytes): such a body could never be read"
            )


def memory_bound_bytes(limits: ServerLimits) -> int:
    """Most memory (bytes) the server can need under these limits, with a view of a testbed-sized cluster.

    BASE_BYTES + max_connections x PER_CONNECTION_BYTES + body_budget_bytes x
    PARSE_OVERHEAD; the figures come from benchmarks/extender_overload.py
    (docs/extender.md, Memory).
    """
    return (
        BASE_BYTES
        + limits.max_connections * PER_CONNECTION_BYTES
        + limits.body_budget_bytes * PARSE_OVERHEAD
    )


def _busy(what: str) -> Response:
    return _text(503, f"extender busy: {what}; retry later")


class BodyBudget:
    """Bytes of request bodies in progress, taken before a body is read and given back after its answer.

    Never waits: a body that does not fit is refused (503), so a burst costs
    answers, not memory.
    """

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._lock = threading.Lock()

    def take(self, amount: int) -> bool:
        """Reserve `amount` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self.used + amount > self.total:
                return False
            self.used += amount
            return True

    def give_back(self, amount: int) -> None:
        """Return bytes reserved by take()."""
        with self._lock:
            self.used -= amount


class HeadTooLargeError(Exception):
    """The request line and headers went over HEAD_LIMIT_BYTES."""


class DeadlineReader(io.RawIOBase):
    """The connection's socket as a raw stream whose reads share one deadline per request.

    Between requests (`deadline` None) a read waits up to `idle_timeout`; from
    the first byte of a request every read gets only the time left until the
    deadline, so a client cannot stretch a request by trickling bytes. While
    `head_left` is set, the bytes read count against it (request line and
    headers).
    """

    def __init__(self, sock: socket.socket, idle_timeout: float) -> None:
        super().__init__()
        self.sock = sock
        self.idle_timeout = idle_timeout
        self.deadline: float | None = None
        self.head_left: int | None = None
        self.expired = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        """Read what the socket has (at least a byte), within the time and head budget left."""
        if self.deadline is None:
            timeout = self.idle_timeout
        else:
            timeout = self.deadline - time.monotonic()
            if timeout <= 0:
                self.expired = True
                raise TimeoutError("request deadline passed")
        view = memoryview(buffer)
        if self.head_left is not None:
            if self.head_left <= 0:
                raise HeadTooLargeError
            view = view[: self.head_left]
        self.sock.settimeout(timeout)
        try:
            count = self.sock.recv_into(view)
        except TimeoutError:
            self.expired = self.deadline is not None
            raise
        if self.head_left is not None:
            self.head_left -= count
        return count


class LingeringCloser:
    """Closes refused connections gracefully, on one thread for all of them.

    A socket closed with unread input makes the kernel send a reset, which can
    reach the client before it has read the answer; so the write side is shut
    down after the answer and the input is read and dropped until the client
    closes, or for LINGER_SECONDS at most.
    """

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float] = {}
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="lingering-close", daemon=True)
        self._thread.start()

    def close(self, sock: socket.socket, answer: bytes = b"") -> None:
        """Send `answer` (if the socket takes it at once), then close `sock` gracefully."""
        try:
            sock.setblocking(False)
            if answer:
                sock.send(answer)  # a few hundred bytes into an empty send buffer
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self._lock:
            if self._stopped:
                sock.close()
                return
            if len(self._deadlines) >= MAX_LINGERING:
                oldest = min(self._deadlines, key=self._deadlines.__getitem__)
                self._forget(oldest)
            self._deadlines[sock] = time.monotonic() + LINGER_SECONDS
            self._selector.register(sock, selectors.EVENT_READ)
        self._wake()

    def stop(self) -> None:
        """Close every lingering connection and end the thread."""
        with self._lock:
            self._stopped = True
        self._wake()
        self._thread.join(timeout=5)

    def _wake(self) -> None:
        """Make the thread look at its sockets again (one pending wake-up is enough)."""
        with contextlib.suppress(BlockingIOError):
            self._wake_write.send(b"\0")

    def _forget(self, sock: socket.socket) -> None:
        # Caller holds the lock.
        self._deadlines.pop(sock, None)
        self._selector.unregister(sock)
        sock.close()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    for sock in list(self._deadlines):
                        self._forget(sock)
                    break
                now = time.monotonic()
                for sock, deadline in list(self._deadlines.items()):
                    if deadline <= now:
                        self._forget(sock)
                wait = min(self._deadlines.values(), default=now + LINGER_SECONDS) - now
            for key, _ in self._selector.select(timeout=max(wait, 0.0)):
                ready = key.fileobj
                if ready is self._wake_read:
                    self._drain(self._wake_read)
                elif isinstance(ready, socket.socket) and not self._drain(ready):
                    with self._lock:
                        if ready in self._deadlines:
                            self._forget(ready)
        self._selector.close()
        self._wake_read.close()
        self._wake_write.close()

    @staticmethod
    def _drain(sock: socket.socket) -> bool:
        """Read and drop what is there; False once the client has closed (or failed)."""
        try:
            return bool(sock.recv(65536))
        except BlockingIOError:
            return True
        except OSError:
            return False


class ExtenderHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer carrying the service and enforcing ServerLimits."""

    daemon_threads = True
    # Stopping does not wait for the connection threads: an idle keep-alive
    # connection would hold it for idle_timeout.
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self, address: tuple[str, int], service: ExtenderService, limits: ServerLimits, tls: ClientAuth | None = None
    ) -> None:
        self.service = service
        self.limits = limits
        self.tls = tls
        limits.check()
        self.connection_slots = threading.BoundedSemaphore(limits.max_connections)
        self.body_budget = BodyBudget(limits.body_budget_bytes)
        self.closer = LingeringCloser()
        self._to_linger: set[socket.socket] = set()
        self._linger_lock = threading.Lock()
        # In the service's registry, so /metrics shows them next to the answered requests.
        self.refusals = Counter(
            "interference_extender_refused",
            "Requests refused by the HTTP limits before reaching filter or prioritize, per reason.",
            ("reason",),
            registry=service.metrics.registry,
        )
        for reason in REFUSAL_REASONS:
            self.refusals.labels(reason=reason)
        super().__init__(address, ExtenderRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a thread of its own, or refuse it with 503 when every slot is taken."""
        if not self.connection_slots.acquire(blocking=False):
            self.refusals.labels(reason="connections").inc()
            self.closer.close(request, _http_bytes(_busy(f"{self.limits.max_connections} connections open")))
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.connection_slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.tls is not None:
                request = self._handshake(request, client_address)
                if request is None:
                    return
            super().process_request_thread(request, client_address)
        finally:
            self.connection_slots.release()

    def _handshake(self, request: socket.socket, client_address: Any) -> ssl.SSLSocket | None:
        """The TLS handshake, on the connection's own thread and within request_timeout; None when it fails."""
        assert self.tls is not None
        try:
            wrapped = self.tls.context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError):
            request.close()
            return None
        try:
            wrapped.settimeout(self.limits.request_timeout)
            wrapped.do_handshake()
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a bad certificate, plain HTTP, a scan
            self.refusals.labels(reason="tls_handshake").inc()
            LOG.info("TLS handshake with %s failed: %s", client_address[0] if client_address else "?", exc)
            wrapped.close()
            return None
        return wrapped

    def linger_on_close(self, request: socket.socket) -> None:
        """Close this connection gracefully when its handler is done (its input may hold an unread body)."""
        with self._linger_lock:
            self._to_linger.add(request)

    def shutdown_request(self, request: Any) -> None:
        with self._linger_lock:
            linger = request in self._to_linger
            self._to_linger.discard(request)
        if linger:
            self.closer.close(request)
        else:
            super().shutdown_request(request)

    def server_close(self) -> None:
        super().server_close()
        self.closer.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that goes away mid-request is routine: one log line, not a traceback on stderr."""
        LOG.info("connection from %s ended abruptly", client_address[0] if client_address else "?")


def _http_bytes(response: Response) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, for refusing one before reading it."""
    head = (
        f"HTTP/1.1 {response.status} {_reason(response.status)}\r\n"
        f"Content-Type: {response.content_type}\r\nContent-Length: {len(response.body)}\r\n"
        "Retry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + response.body


def _reason(status: int) -> str:
    reason = BaseHTTPRequestHandler.responses.get(status)
    return reason[0] if reason else ""


class ExtenderRequestHandler(BaseHTTPRequestHandler):
    """Reads one request at a time within the limits, hands it to the service, writes the answer."""

    protocol_version = "HTTP/1.1"  # keep-alive, as kube-scheduler's Go client expects
    # Answers to requests refused before their version was read carry HTTP/1.1
    # headers too (the stdlib would assume HTTP/0.9 and send a bare body).
    default_request_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # one segment per answer, sent at once
    server: ExtenderHTTPServer
    server_version = "interference-extender"
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, filled by send_response/send_header

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket file StreamRequestHandler made; reads go through the deadline
        self.reader = DeadlineReader(self.connection, self.server.limits.idle_timeout)
        self.buffered = io.BufferedReader(self.reader)
        self.rfile = self.buffered
        self.answered = False

    def handle_one_request(self) -> None:
        """Wait for a request (idle timeout), then read and answer it before its deadline."""
        reader = self.reader
        reader.deadline = None
        reader.head_left = HEAD_LIMIT_BYTES
        reader.expired = False
        self.answered = False
        try:
            if not self.buffered.peek(1):  # the client closed the keep-alive connection
                self.close_connection = True
                return
        except (TimeoutError, OSError):  # idle for idle_timeout, or gone
            self.close_connection = True
            return
        reader.deadline = time.monotonic() + self.server.limits.request_timeout
        # What send_response logs and checks, for an answer before the request line is read.
        self.requestline, self.command, self.request_version = "", "", self.default_request_version
        try:
            super().handle_one_request()  # a TimeoutError in it closes the connection
        except HeadTooLargeError:
            self._refuse(_text(431, f"request line and headers are over {HEAD_LIMIT_BYTES} bytes"), "head_too_large")
        if reader.expired and not self.answered:
            LOG.warning(
                "client %s too slow: request not read within %ss, dropped",
                self.client_address[0], self.server.limits.request_timeout,
            )
            self._refuse(_text(408, f"request not received within {self.server.limits.request_timeout}s"), "deadline")

    def _send(self, response: Response, close: bool = False) -> None:
        self.answered = True
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        if response.status == 503:
            self.send_header("Retry-After", "1")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        # Headers and body in one write (end_headers() would send the headers on
        # their own): one segment per answer, so the client never waits on a
        # delayed ACK between the two.
        buffered: list[bytes] = self._headers_buffer
        head = b"".join([*buffered, b"\r\n"])
        self._headers_buffer = []
        # The answer gets a request_timeout of its own (sendall's timeout bounds the whole write).
        self.connection.settimeout(self.server.limits.request_timeout)
        self.wfile.write(head if self.command == "HEAD" else head + response.body)

    def _refuse(self, response: Response, reason: str) -> None:
        """Answer and close without reading the rest of the request (closed gracefully); counted by reason."""
        self.server.refusals.labels(reason=reason).inc()
        self.server.linger_on_close(self.connection)
        try:
            self._send(response, close=True)
        except OSError:
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors found by BaseHTTPRequestHandler itself (bad request line, 414, 431, 501, 505): JSON too."""
        reason = self.responses.get(code, ("error", ""))[0]
        self.log_error("code %d, message %s", code, message or reason)
        self._refuse(_text(code, explain or message or reason), "bad_request")

    def _body_refusal(self) -> Response | None:
        """Why the body of this request will not be read (411/400/413), or None."""
        if self.headers.get("Transfer-Encoding") is not None:
            return _text(411, "send the body with a Content-Length, not a Transfer-Encoding")
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            return _text(400, f"{len(lengths)} Content-Length headers; send exactly one")
        if not lengths:
            return None
        raw = lengths[0].strip()
        # Digits only: int() would also take "+5", "5_0" and non-ASCII digits.
        if not (raw.isascii() and raw.isdigit()):
            return _text(400, f"bad Content-Length {raw[:32]!r}: expected a number of bytes")
        if int(raw) > self.server.limits.max_body_bytes:
            return _text(
                413, f"request body of {raw} bytes is over the limit of {self.server.limits.max_body_bytes} bytes"
            )
        return None

    def handle_expect_100(self) -> bool:
        # "100 Continue" only for a body that will be read; the others get their final status at once.
        return super().handle_expect_100() if self._body_refusal() is None else True

    def _handle(self) -> None:
        tls = self.server.tls
        if tls is not None and (self.path.split("?", 1)[0].rstrip("/") or "/") in SCHEDULER_PATHS:
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            names = _common_names(peer)
            if not names & tls.client_names:
                who = ", ".join(sorted(names)) if names else "no client certificate"
                allowed = ", ".join(sorted(tls.client_names))
                self._refuse(
                    _text(403, f"{self.path} is for the scheduler only (a client certificate of {allowed} from "
                               f"the extender's CA); the caller sent {who}"),
                    "unauthenticated",
                )
                return
        if self.command != "POST":
            announced = self.headers.get("Transfer-Encoding") is not None or (
                self.headers.get("Content-Length", "0").strip() != "0"
            )
            response = self.server.service.answer(self.command, self.path, b"")
            if announced:  # a body nobody reads: close after the answer instead of parsing it as a request
                self.server.linger_on_close(self.connection)
            self._send(response, close=announced)
            return
        refusal = self._body_refusal()
        if refusal is not None:
            self._refuse(refusal, "body_too_large" if refusal.status == 413 else "bad_request")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not self.server.body_budget.take(length):
            self._refuse(_busy(f"{self.server.body_budget.total} bytes of request bodies in progress"), "body_budget")
            return
        try:
            self.reader.head_left = None
            body = self.rfile.read(length)
            if len(body) < length:  # the client closed mid-body
                self.close_connection = True
                return
            self.reader.deadline = None  # the answer has its own timeout
            response = self.server.service.answer(self.command, self.path, body)
            del body  # the answer is all that is kept while it is written
            self._send(response)
        finally:
            # After the write: a full-node-list answer is about as large as its request.
            self.server.body_budget.give_back(length)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("%s - %s", self.address_string(), format % args)


def serve(
    service: ExtenderService, host: str, port: int, limits: ServerLimits, tls: ClientAuth | None = None
) -> ExtenderHTTPServer:
    """Bind the server (port 0 picks a free one); call serve_forever() on the result. `tls`: HTTPS."""
    return ExtenderHTTPServer((host, port), service, limits, tls)

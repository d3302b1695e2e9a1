"""The extender's request handling, independent of the HTTP server that carries it.

`ExtenderService.answer(method, path, body)` returns the status, content type
and bytes of the response; `server.py` wires it to the standard library's
ThreadingHTTPServer (the choice is argued with figures in docs/extender.md and
benchmarks/extender.py, which runs the same service behind other servers).
"""

from __future__ import annotations

import gc
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .cluster_view import BIND_WAIT_FACTOR, BIND_WAIT_MAX_SECONDS, BIND_WAIT_SECONDS, BindError, ClusterView
from .decisions import ExtenderInputError, filter_nodes, parse_binding_args, parse_extender_args, prioritize_nodes
from .policy import ExtenderPolicy

LOG = logging.getLogger("interference_extender")
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
# Buckets (seconds) around the 20 ms target of a decision at 1,000 nodes.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)
VERBS = ("filter", "prioritize", "bind")
SWITCH_INTERVAL_SECONDS = 0.00025
BIND_RESULTS = ("recorded", "unrecorded", "failed")


@dataclass(frozen=True)
class Response:
    """What to send back: HTTP status, content type, body."""

    status: int
    content_type: str
    body: bytes


def _json(status: int, payload: Any) -> Response:
    return Response(status, JSON, orjson.dumps(payload))


def tune_interpreter() -> None:
    """Tune CPython for answering fast next to the watch threads (call once the service is set up).

    Thread switches: a request thread woken by its socket waits for the GIL
    until the running thread (a watch thread parsing events) drops it, which
    CPython forces only every switch interval (5 ms by default). In the kwok
    benchmark that wait, not the decision (0.15 ms), was most of the time
    kube-scheduler spent per call; 0.25 ms bounds it.

    Garbage collection: a request decodes into up to a few hundred thousand
    short-lived objects (a full NodeList of 1,000 nodes), all freed by
    reference counting; with the default threshold (700) the collector ran
    hundreds of times per request, walking the live view each time it reached
    the old generation, which cost more than the decoding itself. Freezing
    moves what exists at start (modules, the first lists) out of its reach; the
    higher first threshold makes collections rare.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def _text(status: int, message: str) -> Response:
    """A short answer: plain text for a success (/healthz), a JSON error object {status, error} otherwise."""
    if status >= 400:
        return _json(status, {"status": status, "error": message.rstrip("\n")})
    return Response(status, TEXT, (message.rstrip("\n") + "\n").encode())


class ExtenderMetrics:
    """Prometheus metrics of one service (own registry, so tests can run several)."""

    def __init__(self, view: ClusterView) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "interference_extender_requests",
            "Requests answered, per verb and HTTP status code.",
            ("verb", "code"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "interference_extender_request_duration_seconds",
            "Time to answer a request, per verb (seconds, from the body read to the answer).",
            ("verb",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        pods = Gauge("interference_extender_view_pods", "Pods bound to nodes in the live view.", registry=self.registry)
        nodes = Gauge("interference_extender_view_nodes", "Nodes in the live view.", registry=self.registry)
        synced = Gauge(
            "interference_extender_view_synced",
            "1 once pods and nodes are listed (or no cluster).",
            registry=self.registry,
        )
        self.bindings = Counter(
            "interference_extender_bindings",
            "Bind calls, per result: recorded (bound, in the view at once), unrecorded (bound, the pod was not "
            "asked about before: the watch brings it), failed.",
            ("result",),
            registry=self.registry,
        )
        waits_expired = Gauge(
            "interference_extender_bind_waits_expired",
            "Pods scored for a scheduler that binds through the extender whose bind call did not come within "
            "the wait (interference_extender_bind_wait_seconds; refused by a Permit plugin, deleted, ...); "
            "count since start.",
            registry=self.registry,
        )
        waits_expired.set_function(lambda: float(view.bind_waits_expired))
        bind_wait = Gauge(
            "interference_extender_bind_wait_seconds",
            "How long a decision now waits for the bind call of a pod scored before it: "
            f"{BIND_WAIT_FACTOR:g} x the slowest score-to-bind lag seen lately, "
            f"within {BIND_WAIT_SECONDS:g}..{BIND_WAIT_MAX_SECONDS:g} s.",
            registry=self.registry,
        )
        bind_wait.set_function(view.bind_wait)
        pods.set_function(lambda: view.counts()[0])
        nodes.set_function(lambda: view.counts()[1])
        synced.set_function(lambda: 1.0 if view.synced else 0.0)
        for verb in VERBS:  # export the series before the first request, as dashboards expect
            self.latency.labels(verb=verb)
        for result in BIND_RESULTS:
            self.bindings.labels(result=result)


class ExtenderService:
    """Answers kube-scheduler's filter, prioritize and bind calls, /healthz, /readyz and /metrics."""

    def __init__(self, view: ClusterView, policy: ExtenderPolicy) -> None:
        self.view = view
        self.policy = policy
        self.metrics = ExtenderMetrics(view)

    def answer(self, method: str, path: str, body: bytes) -> Response:
        """Route one request; never raises (an unexpected failure is a 500 with its message)."""
        route = path.split("?", 1)[0].rstrip("/") or "/"
        verb = route.lstrip("/")
        if verb in VERBS:
            started = time.perf_counter()
            response = self._decide(method, verb, body)
            self.metrics.latency.labels(verb=verb).observe(time.perf_counter() - started)
            self.metrics.requests.labels(verb=verb, code=str(response.status)).inc()
            return response
        if route == "/healthz":
            return _text(200, "ok")
        if route == "/readyz":
            reason = self.view.unready_reason()
            return _text(200, "ok") if reason is None else _text(503, reason)
        if route == "/metrics":
            return Response(200, CONTENT_TYPE_LATEST, generate_latest(self.metrics.registry))
        return _text(
            404, f"no such path {route}: POST /filter, /prioritize, /bind; GET /healthz, /readyz, /metrics"
        )

    def _decide(self, method: str, verb: str, body: bytes) -> Response:
        if method != "POST":
            kind = "ExtenderBindingArgs" if verb == "bind" else "ExtenderArgs"
            return _text(405, f"{verb} takes POST with an {kind} JSON body")
        try:
            decoded = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return _text(400, f"malformed JSON in the {verb} request: {exc}")
        if verb == "bind":
            return self._bind(decoded)
        try:
            args = parse_extender_args(decoded)
            with self.view.deciding(args.pod_uid, args.facts, prioritize=verb == "prioritize") as view:
                if verb == "filter":
                    payload: Any = filter_nodes(args, view.pods, view.nodes, self.policy)
                else:
                    payload = prioritize_nodes(args, view.pods, view.nodes, self.policy)
        except ExtenderInputError as exc:
            return _text(400, f"bad {verb} request: {exc}")
        except Exception as exc:  # a bug must cost one request, never the service
            LOG.exception("%s failed", verb)
            return _text(500, f"{verb} failed: {type(exc).__name__}: {exc}")
        try:
            return _json(200, payload)
        except orjson.JSONEncodeError as exc:  # (a TypeError: nothing else may run in this try)
            # The filter answer echoes the Node objects it keeps, and orjson
            # encodes at most 254 levels of nesting (it decodes 1,024).
            return _text(400, f"bad {verb} request: a Node nested too deeply to send back ({exc})")

    def _bind(self, decoded: Any) -> Response:
        """Answer a bind call: an ExtenderBindingResult, its Error empty when the pod is bound."""
        try:
            args = parse_binding_args(decoded)
        except ExtenderInputError as exc:
            return _text(400, f"bad bind request: {exc}")
        try:
            recorded = self.view.bind(args, self.policy.scheduler_names)
        except BindError as exc:
            LOG.warning("%s", exc)
            self.metrics.bindings.labels(result="failed").inc()
            return _json(200, {"Error": str(exc)})
        except Exception as exc:  # a bug must cost one request, never the service
            LOG.exception("bind failed")
            self.metrics.bindings.labels(result="failed").inc()
            return _text(500, f"bind failed: {type(exc).__name__}: {exc}")
        self.metrics.bindings.labels(result="recorded" if recorded else "unrecorded").inc()
        return _json(200, {"Error": ""})

"""The extender's live view of the cluster: pods and nodes, kept by list + watch, and its own bindings.

One thread per kind (Pod, Node) lists once, then watches from the list's
resourceVersion, so the view follows every change as the API server sends it
(no polling). A watch that expires (410 Gone), breaks or errors leads to a
fresh list after a short back-off; the view is replaced atomically then.
Reads and updates share one lock; the decisions hold it for the duration of
one request (milliseconds), the watch for one event.

The watch lags kube-scheduler: in a burst, the next pod is scored before the
previous binding has come back through the watch. When kube-scheduler
delegates binding to the extender (`bindVerb`), `bind` records the pod on its
node in the view first, then POSTs the Binding, so the next decision sees it
at once; a failed POST takes it out again, and the watch's own event for the
pod replaces the record. The bind call names the pod only, so the view keeps
the facts of the pods kube-scheduler last asked about (filter, prioritize).
kube-scheduler sends the bind call of a pod from its own goroutine while it
already asks about the next pod, so a decision first waits (briefly, see
`deciding`) for the bind calls of the pods scored before it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .decisions import BindingArgs, binding_refusal
from .facts import NodeFacts, PodFacts, PodIndex, node_facts, pod_facts

LOG = logging.getLogger("interference_extender.view")

# Server-side timeout of one watch call (seconds): the API server ends the
# watch after it and the thread starts the next one from the last version seen.
WATCH_TIMEOUT_SECONDS = 300
# Client-side read timeout (seconds): longer than the server's, so a dead
# connection is noticed without cutting healthy watches.
READ_TIMEOUT_SECONDS = WATCH_TIMEOUT_SECONDS + 30
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)
# Only pods that occupy a node matter: the API server leaves out pending and
# finished pods (and sends DELETED when a pod finishes), which spares the
# watch thread most events of a busy scheduler.
POD_FIELD_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
# Pods being placed (asked about in filter or prioritize, not bound yet) whose
# facts the view keeps for their bind call; the oldest go first. Pods that are
# never bound (unschedulable, deleted) leave this way.
CANDIDATES_KEPT = 10_000
# One Binding POST (seconds): under kube-scheduler's default extender
# httpTimeout (5 s, the role's scheduler_extender_http_timeout), so an API
# server that hangs fails the call here rather than in kube-scheduler.
BIND_TIMEOUT_SECONDS = 4.0
# Connections of the binding client: kube-scheduler binds from one goroutine
# per pod, so a burst has bind rate x API latency calls in flight at once (at
# 1,000 nodes x 5,000 pods on a loaded machine, more than 32: the pool
# overflowed, and every connection over it cost a TLS handshake).
BIND_CONNECTIONS = 128
# How long a decision waits for the bind call of a pod scored before it
# (seconds): BIND_WAIT_FACTOR times the slowest score-to-bind lag seen lately,
# within [BIND_WAIT_SECONDS, BIND_WAIT_MAX_SECONDS]. The call normally arrives
# within a millisecond of the prioritize answer, and the wait ends as it
# comes; only a pod that is never bound (a Permit plugin refused it, it was
# deleted) costs the next decision the whole wait, once. A fixed 0.1 s was too
# short on a loaded 2-core host: kube-scheduler's binding goroutine came later,
# the wait expired, the next pods were scored without the binding, and a
# 40-pod burst piled up (2 of the last 3 CI runs). The ceiling stays well under
# kube-scheduler's extender httpTimeout (5 s), which the waiting call counts in.
BIND_WAIT_SECONDS = 0.5
BIND_WAIT_FACTOR = 4.0
BIND_WAIT_MAX_SECONDS = 2.0
# The lag remembered fades by this factor at each bind call (half in 34 calls).
BIND_LAG_FADE = 0.98


class BindError(Exception):
    """A bind call failed; the message is what kube-scheduler logs (ExtenderBindingResult.Error)."""


class ClusterView:
    """Pods (indexed for the decisions) and nodes (by name), with one lock."""

    def __init__(self) -> None:
        self.pods = PodIndex()
        self.nodes: dict[str, NodeFacts] = {}
        self._lock = threading.Lock()
        self._synced = {"pods": threading.Event(), "nodes": threading.Event()}
        # Kind (pods, nodes) -> why its watch was lost, until a list succeeds again.
        self.lost: dict[str, str] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.watching = False
        self._binder: Any = None  # CoreV1Api once start() ran
        self._candidates: OrderedDict[str, tuple[str | None, PodFacts]] = OrderedDict()
        self._binding: dict[str, PodFacts] = {}  # recorded, Binding POST in flight
        # Pods scored (prioritize answered) whose bind call has not come yet: key -> (when, scheduler name).
        self._scored: dict[str, tuple[float, str | None]] = {}
        # Scheduler names whose pods came back in bind calls: only their bind calls are waited for.
        self._binding_schedulers: set[str | None] = set()
        self._bind_calls = threading.Condition(self._lock)
        # Pods of binding schedulers whose bind call did not come within bind_wait() of their score.
        self.bind_waits_expired = 0
        # The slowest score-to-bind lag seen lately (seconds, fading): what bind_wait() adapts to.
        self.bind_lag = 0.0

    @contextmanager
    def deciding(self, uid: str | None, facts: PodFacts, prioritize: bool) -> Iterator[ClusterView]:
        """Hold the view still while a decision on this pod reads it, once earlier pods' bind calls are in.

        kube-scheduler places one pod at a time but binds it in the
        background: the bind call of pod N can arrive after the filter or
        prioritize call of pod N+1. So, for pods of schedulers seen binding
        through the extender (since their last bind call that did not come),
        a decision waits until every other pod scored less than
        bind_wait() ago has come back in a bind call. The
        pod's facts are kept for its own bind call; `prioritize` marks it
        scored (kube-scheduler binds it next).
        """
        with self._bind_calls:
            self._candidates[facts.key] = (uid, facts)
            self._candidates.move_to_end(facts.key)
            if len(self._candidates) > CANDIDATES_KEPT:
                self._candidates.popitem(last=False)
            self._wait_for_bind_calls(facts.key)
            yield self
            if prioritize:
                self._scored[facts.key] = (time.monotonic(), facts.scheduler_name)

    def _wait_for_bind_calls(self, key: str) -> None:
        """Wait (lock held, released while waiting) for the bind calls of the pods scored before `key`."""
        while True:
            now = time.monotonic()
            due: float | None = None  # when the first awaited bind call stops being awaited
            wait = self.bind_wait()
            for other, (since, scheduler) in list(self._scored.items()):
                expiry = since + wait
                if now >= expiry:
                    del self._scored[other]  # not bound through the extender (refused, deleted, or no bindVerb)
                    if scheduler in self._binding_schedulers:
                        # Waited for in vain: this scheduler's pods are not awaited again until
                        # its next bind call, so a scheduler reconfigured without bindVerb costs
                        # one wait, not one per pod.
                        self._binding_schedulers.discard(scheduler)
                        self.bind_waits_expired += 1
                elif other != key and scheduler in self._binding_schedulers:
                    due = expiry if due is None else min(due, expiry)
            if due is None:
                return
            self._bind_calls.wait(timeout=due - now)

    def bind_wait(self) -> float:
        """How long a decision waits for an earlier pod's bind call now (seconds, see BIND_WAIT_SECONDS)."""
        ceiling = max(BIND_WAIT_MAX_SECONDS, BIND_WAIT_SECONDS)
        return min(max(BIND_WAIT_SECONDS, BIND_WAIT_FACTOR * self.bind_lag), ceiling)

    def unready_reason(self) -> str | None:
        """Why the view cannot be trusted now (first lists not read yet, a watch lost), or None."""
        if self.synced:
            return None
        with self._lock:
            lost = sorted(self.lost.items())
        if lost:
            return "; ".join(f"the watch of {kind} was lost ({why}), listing again" for kind, why in lost)
        return "waiting for the first list of pods and nodes"

    @property
    def synced(self) -> bool:
        """True once both the pod and the node list have been read (always true without a cluster)."""
        return not self.watching or all(event.is_set() for event in self._synced.values())

    def wait_synced(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the first lists; True when both arrived."""
        return all(event.wait(timeout) for event in self._synced.values()) if self.watching else True

    def counts(self) -> tuple[int, int]:
        """(pods, nodes) currently in the view."""
        with self._lock:
            return len(self.pods), len(self.nodes)

    # -- updates (also used by tests and the benchmark to fill a view without a cluster)

    def replace_pods(self, items: list[Mapping[str, Any]]) -> None:
        """Replace every pod with the items of a fresh list."""
        facts = [pod_facts(item) for item in items]
        with self._lock:
            # The list is the API server's word: bindings in flight are in it or
            # come with the watch that follows it.
            self._binding.clear()
            self.pods.clear()
            for fact in facts:
                self.pods.upsert(fact)

    def replace_nodes(self, items: list[Mapping[str, Any]]) -> None:
        """Replace every node with the items of a fresh list."""
        facts = [node_facts(item) for item in items]
        with self._lock:
            self.nodes = {fact.name: fact for fact in facts if fact.name}

    def apply_pod_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event (ADDED, MODIFIED, DELETED) on a Pod."""
        fact = pod_facts(obj)
        with self._lock:
            self._binding.pop(fact.key, None)  # the watch's word replaces the extender's own record
            if kind == "DELETED":
                self.pods.remove(fact.key)
            else:
                self.pods.upsert(fact)

    def apply_node_event(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Apply one watch event (ADDED, MODIFIED, DELETED) on a Node."""
        fact = node_facts(obj)
        with self._lock:
            if kind == "DELETED":
                self.nodes.pop(fact.name, None)
            elif fact.name:
                self.nodes[fact.name] = fact

    # -- the extender's own bindings

    def record_binding(self, key: str, uid: str | None, node: str) -> PodFacts | None:
        """Put pod `key` on `node` in the view, before the API server has the Binding.

        Returns the facts recorded, or None when the view has no facts of that
        pod (not asked about since the extender started, or another pod of the
        same name): the watch then brings it.
        """
        with self._bind_calls:
            scored = self._scored.pop(key, None)
            if scored is not None:
                self.bind_lag = max(time.monotonic() - scored[0], self.bind_lag * BIND_LAG_FADE)
            self._bind_calls.notify_all()
            noted = self._candidates.pop(key, None)
            if noted is None or (uid is not None and noted[0] is not None and noted[0] != uid):
                return None
            facts = dataclasses.replace(noted[1], node_name=node)
            self._binding_schedulers.add(facts.scheduler_name)
            self.pods.upsert(facts)
            self._binding[key] = facts
            return facts

    def end_binding(self, facts: PodFacts, bound: bool) -> None:
        """The Binding POST of a recorded pod returned; a failed one takes the record out again.

        Only the extender's own record is taken out: when the watch has
        delivered the pod meanwhile (bound elsewhere, deleted), its event stands.
        """
        with self._lock:
            if self._binding.get(facts.key) is not facts:
                return
            del self._binding[facts.key]
            if not bound:
                self.pods.remove(facts.key)

    def bind(self, args: BindingArgs, scheduler_names: frozenset[str]) -> bool:
        """Bind a pod to a node for kube-scheduler (its `bindVerb`), recording it in the view first.

        The pod is read from the API server first and must be of the UID
        named, unbound, and of one of `scheduler_names` (binding_refusal);
        otherwise no Binding is sent. Returns True when the pod was recorded
        at once, False when only the watch will bring it (record_binding).
        Raises BindError with the refusal or the API server's answer.
        """
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        namespace, name, uid, node = args.namespace, args.name, args.uid, args.node
        if self._binder is None:
            raise BindError("the extender watches no cluster (started without --kubeconfig): it cannot bind pods")
        try:
            response = self._binder.read_namespaced_pod(
                name, namespace, _preload_content=False, _request_timeout=BIND_TIMEOUT_SECONDS
            )
            pod = json.loads(response.data)
        except Exception as exc:
            reason = _api_message(exc) if isinstance(exc, ApiException) else f"{type(exc).__name__}: {exc}"
            raise BindError(f"binding pod {namespace}/{name} to node {node}: reading the pod: {reason}") from exc
        refusal = binding_refusal(pod if isinstance(pod, Mapping) else {}, args, scheduler_names)
        if refusal is not None:
            raise BindError(f"refused to bind to node {node}: {refusal}")
        recorded = self.record_binding(f"{namespace}/{name}", uid, node)
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name, namespace=namespace, uid=uid),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        try:
            # The answer (the Binding echoed) is not needed, so it is not decoded into a model;
            # read and released, it gives the connection back to the pool (unread, each bind
            # opened a new TLS connection: 4 ms of CPU).
            response = self._binder.create_namespaced_pod_binding(
                name, namespace, binding, _preload_content=False, _request_timeout=BIND_TIMEOUT_SECONDS
            )
            response.read()
            response.release_conn()
        except Exception as exc:  # refused, or no answer: either way the pod is not known to be there
            if recorded is not None:
                self.end_binding(recorded, bound=False)
            reason = _api_message(exc) if isinstance(exc, ApiException) else f"{type(exc).__name__}: {exc}"
            raise BindError(f"binding pod {namespace}/{name} to node {node}: {reason}") from exc
        if recorded is not None:
            self.end_binding(recorded, bound=True)
        return recorded is not None

    # -- the watch threads

    def start(self, api_client: Any) -> None:
        """Start the list + watch threads on a kubernetes ApiClient."""
        from kubernetes import client

        core = client.CoreV1Api(api_client)
        binder_configuration = copy.deepcopy(api_client.configuration)
        binder_configuration.connection_pool_maxsize = BIND_CONNECTIONS
        self._binder = client.CoreV1Api(client.ApiClient(binder_configuration))
        self.watching = True
        Kind = tuple[str, Callable[..., Any], dict[str, str], Callable[[list[Any]], None], Callable[..., None]]
        kinds: list[Kind] = [
            ("pods", core.list_pod_for_all_namespaces, {"field_selector": POD_FIELD_SELECTOR},
             self.replace_pods, self.apply_pod_event),
            ("nodes", core.list_node, {}, self.replace_nodes, self.apply_node_event),
        ]
        for name, lister, selector, replace, apply in kinds:
            thread = threading.Thread(
                target=self._run, args=(name, lister, selector, replace, apply), name=f"watch-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Ask the watch threads to end (they notice at the next event or timeout)."""
        self._stop.set()

    def _run(
        self,
        name: str,
        lister: Callable[..., Any],
        selector: dict[str, str],
        replace: Callable[[list[Any]], None],
        apply: Callable[[str, Any], None],
    ) -> None:
        from kubernetes import watch

        failures = 0
        while not self._stop.is_set():
            try:
                response = lister(_preload_content=False, _request_timeout=READ_TIMEOUT_SECONDS, **selector)
                listed = json.loads(response.data)
                items = listed.get("items") or []
                version = (listed.get("metadata") or {}).get("resourceVersion")
                replace(items)
                if not self._synced[name].is_set():
                    LOG.info("view: listed %d %s", len(items), name)
                with self._lock:
                    self.lost.pop(name, None)
                self._synced[name].set()
                while not self._stop.is_set():
                    stream = watch.Watch().stream(
                        lister,
                        resource_version=version,
                        timeout_seconds=WATCH_TIMEOUT_SECONDS,
                        allow_watch_bookmarks=True,
                        deserialize=False,
                        _request_timeout=READ_TIMEOUT_SECONDS,
                        **selector,
                    )
                    for event in stream:
                        kind = event.get("type")
                        obj = event.get("object") or {}
                        if kind == "ERROR":
                            raise WatchExpiredError(str(obj.get("message") or obj))  # noqa: TRY301
                        new_version = (obj.get("metadata") or {}).get("resourceVersion")
                        if kind in ("ADDED", "MODIFIED", "DELETED"):
                            apply(kind, obj)
                        version = new_version or version
                        failures = 0
                        if self._stop.is_set():
                            return
            except Exception as exc:
                failures += 1
                delay = BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS)) - 1]
                if not isinstance(exc, WatchExpiredError):
                    # The API server is out of reach: the view goes stale, so /readyz
                    # answers 503 until a fresh list succeeds. (An expired watch is
                    # routine: the list that follows takes milliseconds.)
                    with self._lock:
                        self.lost[name] = f"{type(exc).__name__}: {exc}"
                    self._synced[name].clear()
                LOG.warning(
                    "view: %s watch ended (%s: %s); listing again in %.1fs", name, type(exc).__name__, exc, delay
                )
                self._stop.wait(delay)


def _api_message(exc: Any) -> str:
    """HTTP status and the API server's message of an ApiException (its Status body), in one line."""
    message = ""
    try:
        message = str(json.loads(exc.body or "{}").get("message") or "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    return f"{exc.status} {exc.reason}" + (f": {message}" if message else "")


class WatchExpiredError(Exception):
    """The API server ended a watch with an ERROR event (usually 410 Gone: list again)."""

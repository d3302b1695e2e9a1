"""The extender's live view of the cluster: pods and nodes, kept by list + watch.

One thread per kind (Pod, Node) lists once, then watches from the list's
resourceVersion, so the view follows every change as the API server sends it
(no polling). A watch that expires (410 Gone), breaks or errors leads to a
fresh list after a short back-off; the view is replaced atomically then.
Reads and updates share one lock; the decisions hold it for the duration of
one request (milliseconds), the watch for one event.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .facts import NodeFacts, PodIndex, node_facts, pod_facts

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


class ClusterView:
    """Pods (indexed for the decisions) and nodes (by name), with one lock."""

    def __init__(self) -> None:
        self.pods = PodIndex()
        self.nodes: dict[str, NodeFacts] = {}
        self._lock = threading.Lock()
        self._synced = {"pods": threading.Event(), "nodes": threading.Event()}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.watching = False

    @contextmanager
    def locked(self) -> Iterator[ClusterView]:
        """Hold the view still while a decision reads it."""
        with self._lock:
            yield self

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

    # -- the watch threads

    def start(self, api_client: Any) -> None:
        """Start the list + watch threads on a kubernetes ApiClient."""
        from kubernetes import client

        core = client.CoreV1Api(api_client)
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
                LOG.warning(
                    "view: %s watch ended (%s: %s); listing again in %.1fs", name, type(exc).__name__, exc, delay
                )
                self._stop.wait(delay)


class WatchExpiredError(Exception):
    """The API server ended a watch with an ERROR event (usually 410 Gone: list again)."""

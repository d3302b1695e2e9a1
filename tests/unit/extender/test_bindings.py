"""The extender's own bindings: recorded in the view before the watch brings them.

The Binding POST itself needs an API server (tests/integration/test_extender_burst_kwok.py
runs it against kwok's); here, what the view records around it, and the bind
verb's answers when there is no cluster.
"""

from __future__ import annotations

import json
import threading

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import profile_for_type

from interference_extender import cluster_view
from interference_extender.cluster_view import ClusterView
from interference_extender.decisions import (
    BindingArgs,
    ExtenderArgs,
    ExtenderInputError,
    binding_refusal,
    parse_binding_args,
    parse_extender_args,
)
from interference_extender.policy import ExtenderPolicy
from interference_extender.service import ExtenderService
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise

CPU = profile_for_type("cpu")


def view_with_nodes() -> ClusterView:
    view = ClusterView()
    view.replace_nodes(serialise([make_node("a"), make_node("b")]))
    return view


def request(name: str, uid: str | None = None) -> ExtenderArgs:
    """kube-scheduler's filter or prioritize request for a cpu pod."""
    body = extender_args(make_pod(name, pod_type="cpu"), [make_node("a"), make_node("b")], node_cache_capable=True)
    if uid is not None:
        body["Pod"]["metadata"]["uid"] = uid
    return parse_extender_args(json.loads(json.dumps(body)))


def scored(view: ClusterView, name: str, uid: str | None = None) -> None:
    """What the service does on a prioritize call for a cpu pod."""
    args = request(name, uid)
    with view.deciding(args.pod_uid, args.facts, prioritize=True):
        pass


def decide_in_thread(view: ClusterView, name: str, seen: list[float]) -> threading.Thread:
    """A decision on pod `name` in its own thread; appends the interference a cpu pod would have on node a."""

    def run() -> None:
        args = request(name)
        with view.deciding(args.pod_uid, args.facts, prioritize=True) as held:
            seen.append(held.pods.interference(CPU, "a"))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_recorded_binding_counts_at_once_for_the_next_decision() -> None:
    view = view_with_nodes()
    scored(view, "c1", uid="u1")
    recorded = view.record_binding("default/c1", "u1", "a")
    assert recorded is not None and recorded.node_name == "a"
    assert view.pods.interference(CPU, "a") > 0
    assert view.pods.interference(CPU, "b") == 0
    view.end_binding(recorded, bound=True)
    assert view.pods.interference(CPU, "a") > 0  # confirmed: it stays


def test_a_failed_binding_is_taken_out_again() -> None:
    view = view_with_nodes()
    scored(view, "c1")
    recorded = view.record_binding("default/c1", None, "a")
    assert recorded is not None
    view.end_binding(recorded, bound=False)
    assert view.pods.interference(CPU, "a") == 0
    assert len(view.pods) == 0


def test_the_watch_wins_over_the_extenders_record() -> None:
    view = view_with_nodes()
    scored(view, "c1")
    recorded = view.record_binding("default/c1", None, "a")
    assert recorded is not None
    # Meanwhile the watch says the pod is on b (another binder won): a failed POST must not remove that.
    view.apply_pod_event("ADDED", serialise(make_pod("c1", pod_type="cpu", node_name="b")))
    view.end_binding(recorded, bound=False)
    assert view.pods.interference(CPU, "a") == 0
    assert view.pods.interference(CPU, "b") > 0


def test_a_pod_never_asked_about_or_of_another_uid_is_not_recorded() -> None:
    view = view_with_nodes()
    assert view.record_binding("default/unknown", "u9", "a") is None
    scored(view, "c1", uid="old-uid")
    assert view.record_binding("default/c1", "new-uid", "a") is None
    assert len(view.pods) == 0


def test_the_candidates_kept_are_bounded_oldest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = 5
    monkeypatch.setattr(cluster_view, "CANDIDATES_KEPT", kept)
    view = view_with_nodes()
    for i in range(kept + 1):
        scored(view, f"p{i}")
    assert view.record_binding("default/p0", None, "a") is None
    assert all(view.record_binding(f"default/p{i}", None, "a") is not None for i in range(1, kept + 1))


def test_bind_without_a_cluster_answers_with_an_error_for_kube_scheduler() -> None:
    service = ExtenderService(view_with_nodes(), ExtenderPolicy())
    body = json.dumps({"PodName": "c1", "PodNamespace": "default", "PodUID": "u1", "Node": "a"}).encode()
    response = service.answer("POST", "/bind", body)
    assert response.status == 200
    assert "cannot bind" in json.loads(response.body)["Error"]
    assert len(service.view.pods) == 0


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ([], "ExtenderBindingArgs: expected a JSON object, got a list"),
        ({"PodNamespace": "default", "Node": "a"}, "PodName"),
        ({"PodName": "c1", "PodNamespace": "default", "Node": ""}, "Node"),
        ({"PodName": "c1", "PodNamespace": "default", "PodUID": 7, "Node": "a"}, "PodUID"),
        ({"PodName": "c1", "PodNamespace": "default", "Node": "a"}, "PodUID: expected the pod's UID"),
        ({"PodName": "c1", "PodNamespace": "default", "PodUID": "", "Node": "a"}, "got an empty string"),
    ],
)
def test_bad_binding_args_name_the_field(body: object, named: str) -> None:
    with pytest.raises(ExtenderInputError, match=named):
        parse_binding_args(body)
    response = ExtenderService(ClusterView(), ExtenderPolicy()).answer("POST", "/bind", json.dumps(body).encode())
    assert response.status == 400
    assert named in response.body.decode()


def test_binding_args_as_kube_scheduler_sends_them() -> None:
    # Go field names, matched case-insensitively as Go's decoder does.
    args = parse_binding_args({"podName": "c1", "PodNamespace": "ns", "podUID": "u1", "Node": "a"})
    assert (args.namespace, args.name, args.uid, args.node) == ("ns", "c1", "u1", "a")


SCHEDULERS = frozenset({"interference-scheduler"})
ASKED = BindingArgs(name="c1", namespace="apps", uid="u1", node="a")


def live_pod(uid: str = "u1", node: str | None = None, scheduler: str | None = "interference-scheduler") -> dict:
    """The pod as the API server returns it (the parts the bind check reads)."""
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "x"}]}
    if node is not None:
        spec["nodeName"] = node
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"metadata": {"name": "c1", "namespace": "apps", "uid": uid}, "spec": spec}


def test_a_pending_pod_of_the_extenders_scheduler_of_that_uid_may_be_bound() -> None:
    assert binding_refusal(live_pod(), ASKED, SCHEDULERS) is None


@pytest.mark.parametrize(
    ("pod", "why"),
    [
        (live_pod(uid="u2"), "pod apps/c1 has UID u2, not u1 as the bind call says: not bound"),
        (live_pod(node="b"), "pod apps/c1 is already bound to node b: not bound again"),
        (live_pod(scheduler=None), "pod apps/c1 is scheduled by default-scheduler, not by this extender's "
                                   "scheduler (interference-scheduler): not bound"),
        (live_pod(scheduler="gpu-scheduler"), "is scheduled by gpu-scheduler"),
        ({"metadata": "broken"}, "has UID None"),
    ],
)
def test_the_bind_check_refuses_naming_why(pod: dict, why: str) -> None:
    refusal = binding_refusal(pod, ASKED, SCHEDULERS)
    assert refusal is not None and why in refusal


def test_no_scheduler_names_binds_nothing() -> None:
    refusal = binding_refusal(live_pod(), ASKED, frozenset())
    assert refusal is not None and "none (scheduler_names is empty)" in refusal


def test_readyz_says_the_watch_was_lost_until_a_list_succeeds() -> None:
    view = ClusterView()
    view.watching = True
    service = ExtenderService(view, ExtenderPolicy())
    assert service.answer("GET", "/readyz", b"").status == 503
    for event in view._synced.values():
        event.set()
    assert service.answer("GET", "/readyz", b"").status == 200
    # What the watch thread does when the API server is out of reach.
    view.lost["pods"] = "ConnectionRefusedError: [Errno 111] Connection refused"
    view._synced["pods"].clear()
    response = service.answer("GET", "/readyz", b"")
    assert response.status == 503
    assert "the watch of pods was lost (ConnectionRefusedError" in json.loads(response.body)["error"]


def test_a_decision_waits_for_the_bind_call_of_the_pod_scored_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_view, "BIND_WAIT_SECONDS", 60.0)  # far longer than the test: never expires here
    view = view_with_nodes()
    scored(view, "first")  # this scheduler binds through the extender: seen once
    first = view.record_binding("default/first", None, "b")
    assert first is not None
    view.end_binding(first, bound=True)
    scored(view, "c1")  # prioritize answered; its bind call has not come yet
    seen: list[float] = []
    decision = decide_in_thread(view, "c2", seen)
    decision.join(timeout=0.2)
    assert decision.is_alive() and not seen  # still waiting for c1's bind call
    view.record_binding("default/c1", None, "a")
    decision.join(timeout=30)
    assert seen and seen[0] > 0  # decided knowing c1 is on a
    assert view.bind_waits_expired == 0


def test_a_bind_call_that_never_comes_costs_one_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_view, "BIND_WAIT_SECONDS", 0.05)
    view = view_with_nodes()
    scored(view, "first")
    first = view.record_binding("default/first", None, "b")
    assert first is not None
    scored(view, "refused-by-a-permit-plugin")
    seen: list[float] = []
    decide_in_thread(view, "c2", seen).join(timeout=30)
    assert seen == [0.0]
    assert view.bind_waits_expired == 1
    # The scheduler was reconfigured without bindVerb, say: its next pods are not waited for.
    monkeypatch.setattr(cluster_view, "BIND_WAIT_SECONDS", 3600.0)
    scored(view, "c3")
    decision = decide_in_thread(view, "c4", seen)
    decision.join(timeout=30)
    assert not decision.is_alive() and seen == [0.0, 0.0]


def test_pods_of_schedulers_that_bind_themselves_are_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_view, "BIND_WAIT_SECONDS", 3600.0)
    view = view_with_nodes()
    scored(view, "c1")  # no bind call was ever seen: kube-scheduler binds (no bindVerb)
    seen: list[float] = []
    decide_in_thread(view, "c2", seen).join(timeout=30)
    assert seen == [0.0]


@pytest.mark.parametrize("metadata", [True, 7, "x", ["uid"]])
def test_pod_metadata_of_the_wrong_type_is_a_400_naming_it(metadata: object) -> None:
    # Found by the fuzz test: the pod's UID (read for the bind memory) was read
    # before the pod's fields were checked, and crashed on such metadata (500).
    service = ExtenderService(view_with_nodes(), ExtenderPolicy())
    body = json.dumps({"Pod": {"metadata": metadata, "spec": {}}, "NodeNames": ["a"]}).encode()
    for verb in ("/filter", "/prioritize"):
        response = service.answer("POST", verb, body)
        assert response.status == 400, response.body
        assert "Pod.metadata" in json.loads(response.body)["error"]


def test_the_wait_follows_the_slowest_bind_lag_seen_within_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # A loaded host: kube-scheduler's bind call comes 0.3 s after the score. The
    # next decisions wait 4 x that, so a lag like it no longer expires the wait
    # (with a fixed 0.1 s it did, and a burst piled up); the lag fades as
    # quicker bind calls follow, and the wait never passes its ceiling.
    now = [1000.0]
    monkeypatch.setattr(cluster_view.time, "monotonic", lambda: now[0])
    view = view_with_nodes()
    assert view.bind_wait() == cluster_view.BIND_WAIT_SECONDS
    scored(view, "slow")
    now[0] += 0.3
    assert view.record_binding("default/slow", None, "a") is not None
    assert view.bind_wait() == pytest.approx(cluster_view.BIND_WAIT_FACTOR * 0.3)
    for i in range(200):
        scored(view, f"quick-{i}")
        view.record_binding(f"default/quick-{i}", None, "b")
    assert view.bind_wait() == cluster_view.BIND_WAIT_SECONDS
    scored(view, "stalled")
    now[0] += 60.0
    view.record_binding("default/stalled", None, "a")
    assert view.bind_wait() == cluster_view.BIND_WAIT_MAX_SECONDS
    assert view.bind_waits_expired == 0

"""The extender's own bindings: recorded in the view before the watch brings them.

The Binding POST itself needs an API server (tests/integration/test_extender_burst_kwok.py
runs it against kwok's); here, what the view records around it, and the bind
verb's answers when there is no cluster.
"""

from __future__ import annotations

import json

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import profile_for_type

from interference_extender.cluster_view import CANDIDATES_KEPT, ClusterView
from interference_extender.decisions import ExtenderInputError, parse_binding_args, parse_extender_args
from interference_extender.policy import ExtenderPolicy
from interference_extender.service import ExtenderService
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise

CPU = profile_for_type("cpu")


def view_with_nodes() -> ClusterView:
    view = ClusterView()
    view.replace_nodes(serialise([make_node("a"), make_node("b")]))
    return view


def scored(view: ClusterView, name: str, uid: str | None = None) -> None:
    """What the service does on a filter or prioritize call for a cpu pod."""
    body = extender_args(make_pod(name, pod_type="cpu"), [make_node("a"), make_node("b")], node_cache_capable=True)
    if uid is not None:
        body["Pod"]["metadata"]["uid"] = uid
    args = parse_extender_args(json.loads(json.dumps(body)))
    view.note_candidate(args.pod_uid, args.facts)


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


def test_the_candidates_kept_are_bounded_oldest_first() -> None:
    view = view_with_nodes()
    for i in range(CANDIDATES_KEPT + 1):
        scored(view, f"p{i}")
    assert view.record_binding("default/p0", None, "a") is None
    assert view.record_binding(f"default/p{CANDIDATES_KEPT}", None, "a") is not None


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
        ([], "must be a JSON object"),
        ({"PodNamespace": "default", "Node": "a"}, "PodName"),
        ({"PodName": "c1", "PodNamespace": "default", "Node": ""}, "Node"),
        ({"PodName": "c1", "PodNamespace": "default", "PodUID": 7, "Node": "a"}, "PodUID"),
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
    args = parse_binding_args({"podName": "c1", "PodNamespace": "ns", "PodUID": "", "Node": "a"})
    assert (args.namespace, args.name, args.uid, args.node) == ("ns", "c1", None, "a")

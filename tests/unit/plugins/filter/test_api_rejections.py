"""api_rejections filter: the dry-run verdicts of kubernetes.core.k8s, turned into sentences naming apps.

The error strings are those kubernetes.core 6.2 returned for a kube-apiserver
1.34 dry run (recorded from the kwok control plane); the end-to-end path runs
in tests/integration/test_apps_role_kwok.py.
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.interference.orchestrator.plugins.filter.api_rejections import api_rejections
from ansible_collections.interference.orchestrator.plugins.plugin_utils.api_rejections import server_status

FIELD = "spec.template.spec.containers[0].securityContext.runAsUser"


def status(name: str, causes: list[dict[str, str]], message: str = "") -> str:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message or f'Deployment.apps "{name}" is invalid',
        "reason": "Invalid",
        "details": {"name": name, "group": "apps", "kind": "Deployment", "causes": causes},
        "code": 422,
    }
    return "Failed to apply object: " + json.dumps(body, separators=(",", ":")) + "\n"


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "apps"}}


ACCEPTED: dict[str, Any] = {"changed": True, "method": "apply", "result": {"kind": "Deployment"}}
RUN_AS_USER = {
    "changed": False,
    "result": {},
    "error": {
        "msg": status("bad", [{"reason": "FieldValueInvalid", "field": FIELD,
                               "message": "Invalid value: -5: must be between 0 and 2147483647, inclusive"}]),
        "reason": "Unprocessable Entity",
    },
}


def test_only_refused_deployments_are_named_by_index_and_name_with_each_field() -> None:
    dry_run = {"changed": True, "result": {"results": [ACCEPTED, RUN_AS_USER]}}
    sentences = api_rejections(dry_run, [deployment("good"), deployment("bad")], iter(["good", "bad"]))
    assert sentences == [
        f"apps[1] (bad): refused by the API server: field '{FIELD}': "
        "Invalid value: -5: must be between 0 and 2147483647, inclusive."
    ]


def test_a_single_deployment_has_its_verdict_at_the_top_level() -> None:
    assert api_rejections(RUN_AS_USER, [deployment("bad")], ["other", "bad"])[0].startswith("apps[1] (bad): ")
    assert api_rejections(ACCEPTED, [deployment("good")], ["good"]) == []


def test_every_cause_is_given_and_an_app_not_in_the_list_is_called_unlisted() -> None:
    privileged = "Invalid value: ...: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
    two = {
        "error": {
            "msg": status("kept", [
                {"field": "spec.template.spec.containers[0].securityContext", "message": privileged},
                {"field": "spec.replicas", "message": "Invalid value: -1: must be greater than or equal to 0"},
            ])
        }
    }
    [sentence] = api_rejections({"result": {"results": [ACCEPTED, two]}}, [deployment("a"), deployment("kept")], ["a"])
    assert sentence.startswith("unlisted app kept: refused by the API server: field 'spec.template.spec.containers[0]")
    assert "`privileged` to true; field 'spec.replicas': Invalid value: -1" in sentence


def test_an_error_without_a_status_is_passed_on_as_it_is() -> None:
    forbidden = {"error": {"msg": "Failed to apply object: connection refused"}}
    assert api_rejections(forbidden, [deployment("a")], ["a"]) == [
        "apps[0] (a): refused by the API server: Failed to apply object: connection refused."
    ]
    no_causes = {"error": {"msg": status("a", [], message='admission webhook "policy" denied the request: no root')}}
    assert api_rejections(no_causes, [deployment("a")], ["a"]) == [
        'apps[0] (a): refused by the API server: admission webhook "policy" denied the request: no root.'
    ]


def test_server_status_reads_only_a_status_object() -> None:
    assert server_status(RUN_AS_USER["error"]["msg"])["code"] == 422  # type: ignore[index]
    assert server_status("Failed to apply object: {not json") is None
    assert server_status('Failed: {"kind": "Deployment"}') is None
    assert server_status("no object at all") is None

"""run_lock: what a run does with the apps Lease at each step (pure; the Lease itself is tested on kwok)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter.run_lock import run_lock
from ansible_collections.interference.orchestrator.plugins.plugin_utils.run_lock import LEASE_NAME, decide

NS = "interference-apps"
ME = "alice@laptop run aaaa"
OTHER = "bob@ci run bbbb"
T0 = "2026-12-01T09:00:00.000000Z"


def lease(holder: str, acquired: str = T0, renewed: str = T0, duration: int = 600, rv: str = "42") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": NS, "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "acquireTime": acquired, "renewTime": renewed,
                 "leaseDurationSeconds": duration, "leaseTransitions": 3},
    }


def test_no_lease_is_created_without_a_resource_version() -> None:
    verdict = decide([], "acquire", ME, now=T0, duration=600, namespace=NS)
    assert verdict["refuse"] == ""
    written = verdict["write"]
    assert "resourceVersion" not in written["metadata"]
    assert written["spec"] == {"holderIdentity": ME, "leaseDurationSeconds": 600, "acquireTime": T0,
                               "renewTime": T0, "leaseTransitions": 0}


def test_a_lease_another_run_renewed_in_time_is_refused_naming_holder_and_age() -> None:
    held = lease(OTHER, acquired="2026-12-01T08:50:00.000000Z", renewed="2026-12-01T08:58:00.000000Z")
    verdict = decide([held], "acquire", ME, now=T0, duration=600, namespace=NS)
    assert verdict["write"] is None
    assert verdict["refuse"].startswith(
        f"Another run is placing the apps: Lease {NS}/{LEASE_NAME} is held by {OTHER}, acquired 10 min 0 s ago, "
        "renewed 2 min 0 s ago, expires in 8 min 0 s."
    )
    assert "apps_lock_break=true" in verdict["refuse"]


def test_break_takes_a_live_lease_with_the_resource_version_read() -> None:
    verdict = decide([lease(OTHER)], "acquire", ME, now=T0, duration=600, namespace=NS, break_lock=True)
    assert verdict["refuse"] == ""
    assert verdict["write"]["metadata"]["resourceVersion"] == "42"
    assert verdict["write"]["spec"]["holderIdentity"] == ME
    assert verdict["write"]["spec"]["leaseTransitions"] == 4
    assert verdict["message"].startswith(
        f"Breaking the apps lock (apps_lock_break): Lease {NS}/{LEASE_NAME} was held by {OTHER}"
    )


def test_an_expired_lease_is_taken_over_and_says_so() -> None:
    stale = lease(OTHER, renewed="2026-12-01T08:40:00.000000Z", duration=600)
    verdict = decide([stale], "acquire", ME, now=T0, duration=600, namespace=NS)
    assert verdict["refuse"] == ""
    assert verdict["write"]["metadata"]["resourceVersion"] == "42"
    assert "Taking over an expired apps lock" in verdict["message"]
    assert "expired 10 min 0 s ago" in verdict["message"]


def test_one_second_before_expiry_the_lease_still_holds() -> None:
    live = lease(OTHER, renewed="2026-12-01T08:50:01.000000Z", duration=600)
    assert decide([live], "acquire", ME, now=T0, duration=600, namespace=NS)["refuse"]


def test_a_released_lease_is_taken_silently() -> None:
    verdict = decide([lease("")], "acquire", ME, now=T0, duration=600, namespace=NS)
    assert verdict["refuse"] == "" and verdict["message"] == ""
    assert verdict["write"]["spec"]["holderIdentity"] == ME


def test_renew_keeps_the_acquire_time_and_moves_the_renew_time() -> None:
    later = "2026-12-01T09:05:00.000000Z"
    verdict = decide([lease(ME)], "renew", ME, now=later, duration=600, namespace=NS)
    assert verdict["refuse"] == ""
    assert verdict["write"]["spec"]["acquireTime"] == T0
    assert verdict["write"]["spec"]["renewTime"] == later
    assert verdict["write"]["metadata"]["resourceVersion"] == "42"


@pytest.mark.parametrize("found", [[], [lease(OTHER)]])
def test_renew_of_a_lock_lost_or_gone_stops_the_run(found: list[dict[str, Any]]) -> None:
    verdict = decide(found, "renew", ME, now=T0, duration=600, namespace=NS)
    assert verdict["write"] is None
    assert verdict["refuse"].startswith("This run lost the apps lock")
    if found:
        assert OTHER in verdict["refuse"]


def test_verify_refuses_unless_the_lease_read_back_names_this_run() -> None:
    assert decide([lease(ME)], "verify", ME, now=T0, duration=600, namespace=NS)["refuse"] == ""
    refused = decide([lease(OTHER)], "verify", ME, now=T0, duration=600, namespace=NS)["refuse"]
    assert refused.startswith(f"This run did not get the apps lock: Lease {NS}/{LEASE_NAME} held by {OTHER}")
    assert decide([], "verify", ME, now=T0, duration=600, namespace=NS)["refuse"].endswith("is missing.")


def test_release_deletes_only_a_lease_this_run_holds() -> None:
    mine = lease(ME)
    assert decide([mine], "release", ME, now=T0, duration=600, namespace=NS)["delete"] is mine
    assert decide([lease(OTHER)], "release", ME, now=T0, duration=600, namespace=NS)["delete"] is None
    assert decide([], "release", ME, now=T0, duration=600, namespace=NS)["delete"] is None


def test_a_duration_given_as_text_is_read_as_seconds() -> None:
    verdict = decide([], "acquire", ME, now=T0, duration="900", namespace=NS)
    assert verdict["write"]["spec"]["leaseDurationSeconds"] == 900


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("grab", ME, T0, 600), "step is 'grab'"),
        (("acquire", " ", T0, 600), "holder identity is empty"),
        (("acquire", ME, "yesterday", 600), "now is 'yesterday', not an RFC 3339 time"),
        (("acquire", ME, T0, 0), "apps_lock_duration is 0"),
        (("acquire", ME, T0, "ten"), "apps_lock_duration is 'ten'"),
        (("acquire", ME, T0, True), "apps_lock_duration is True"),
    ],
)
def test_bad_input_is_an_ansible_error_naming_the_field(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match="run lock: ") as caught:
        step, identity, now, duration = args
        run_lock([], step, identity, now, duration, NS)
    assert message in str(caught.value)


def test_a_lease_with_a_broken_time_is_an_error_not_a_traceback() -> None:
    broken = lease(OTHER, renewed="soon")
    with pytest.raises(AnsibleFilterError, match="renewTime is 'soon'"):
        run_lock([broken], "acquire", ME, T0, 600, NS)

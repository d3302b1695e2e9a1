"""The run lock of the apps role: one coordination.k8s.io/v1 Lease per apps namespace.

A run reads the Lease, asks `decide` what to do, writes what it returns with
the resourceVersion it read (so a concurrent writer makes the write fail with
a 409 Conflict instead of both winning), then reads it back and checks that
it is the holder. This module is pure: times are passed in, nothing talks to
the API server.

A Lease is free when it does not exist, when its holderIdentity is empty, or
when it expired: its renewTime plus leaseDurationSeconds is in the past (a
run that died without releasing it). A Lease another run holds and renewed
recently is taken only when the user breaks it on purpose.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError

LEASE_NAME = "interference-orchestrator-apps"
# The Lease's own timestamps are MicroTime: RFC 3339 with microseconds, in UTC.
MICRO_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
STEPS = ("acquire", "renew", "verify", "release")
BREAK_VARIABLE = "apps_lock_break"


class LockError(PlacementError):
    """The inputs of the lock decision are malformed (not a refusal: refusals are returned)."""


def parse_time(value: object, what: str) -> datetime:
    """A MicroTime (or RFC 3339 time without fraction) as an aware UTC datetime."""
    if not isinstance(value, str) or not value:
        raise LockError(f"run lock: {what} is {value!r}, not an RFC 3339 time")
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise LockError(f"run lock: {what} is {value!r}, not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _seconds(seconds: float) -> str:
    """A duration (seconds) as people read it: 42 s, 12 min 5 s, 3 h 2 min."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def describe(lease: dict[str, Any], now: datetime) -> str:
    """Who holds `lease`, since when and until when, in one clause."""
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or "nobody"
    parts = [f"held by {holder}"]
    if spec.get("acquireTime"):
        parts.append(f"acquired {_seconds((now - parse_time(spec['acquireTime'], 'acquireTime')).total_seconds())} ago")
    if spec.get("renewTime"):
        renewed = parse_time(spec["renewTime"], "renewTime")
        parts.append(f"renewed {_seconds((now - renewed).total_seconds())} ago")
        duration = spec.get("leaseDurationSeconds")
        if isinstance(duration, int):
            left = renewed.timestamp() + duration - now.timestamp()
            parts.append(f"expires in {_seconds(left)}" if left > 0 else f"expired {_seconds(-left)} ago")
    return ", ".join(parts)


def expired(lease: dict[str, Any], now: datetime) -> bool:
    """Whether the holder of `lease` stopped renewing it longer ago than its leaseDurationSeconds."""
    spec = lease.get("spec") or {}
    renewed = spec.get("renewTime") or spec.get("acquireTime")
    duration = spec.get("leaseDurationSeconds")
    if not renewed or not isinstance(duration, int):
        # A Lease without times cannot be waited out: treat it as expired rather than blocking forever.
        return True
    return parse_time(renewed, "renewTime").timestamp() + duration < now.timestamp()


def decide(  # noqa: PLR0917 - the run_lock filter passes its Jinja arguments through by position
    leases: list[dict[str, Any]],
    step: str,
    identity: str,
    now: str,
    duration: int | str,
    namespace: str,
    break_lock: bool = False,
) -> dict[str, Any]:
    """What a run does with the lock at `step` (acquire, renew, verify or release).

    `leases` is the k8s_info result (zero or one Lease), `identity` this run's
    holderIdentity, `now` a MicroTime, `duration` the lease duration
    (seconds). Returns {write: the Lease to create or replace or None,
    delete: the Lease to delete (release) or None, refuse: why the run must
    stop, or "", message: one line for the log, or ""}. `verify` (after a
    write, on the Lease read back) refuses when this run is not its holder.
    """
    if step not in STEPS:
        raise LockError(f"run lock: step is {step!r}, not one of {', '.join(STEPS)}")
    if not isinstance(identity, str) or not identity.strip():
        raise LockError("run lock: the holder identity is empty")
    if isinstance(duration, str) and duration.strip().isdigit():
        duration = int(duration)
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 1:
        raise LockError(f"run lock: apps_lock_duration is {duration!r}, not a positive number of seconds")
    current = parse_time(now, "now")
    if len(leases) > 1:
        raise LockError(f"run lock: {len(leases)} Leases named {LEASE_NAME} in {namespace}")
    lease = leases[0] if leases else None
    spec = (lease or {}).get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    where = f"Lease {namespace}/{LEASE_NAME}"
    result: dict[str, Any] = {"write": None, "delete": None, "refuse": "", "message": ""}

    if step == "release":
        # A Lease another run holds (this run never got it, or lost it) is left alone.
        if lease is not None and holder == identity:
            result["delete"] = lease
        return result

    if step == "verify":
        # After a write: the Lease read back must name this run.
        if lease is None or holder != identity:
            state = "is missing" if lease is None else describe(lease, current)
            result["refuse"] = f"This run did not get the apps lock: {where} {state}."
        return result

    if step == "renew":
        if lease is None or holder != identity:
            state = "is gone" if lease is None else describe(lease, current)
            result["refuse"] = (
                f"This run lost the apps lock ({where} {state}), so another run may be changing the apps: "
                "stopping here. Rerun when that run has finished."
            )
            return result
        result["write"] = _lease(lease, namespace, identity, spec.get("acquireTime") or now, now, duration,
                                 int(spec.get("leaseTransitions") or 0))
        return result

    # acquire
    if lease is None:
        result["write"] = _lease(None, namespace, identity, now, now, duration, 0)
        return result
    transitions = int(spec.get("leaseTransitions") or 0)
    if holder == identity:
        result["write"] = _lease(lease, namespace, identity, spec.get("acquireTime") or now, now, duration, transitions)
        return result
    if holder and not expired(lease, current):
        if not break_lock:
            result["refuse"] = (
                f"Another run is placing the apps: {where} is {describe(lease, current)}. Nothing was read or "
                f"changed. Wait for it to finish; if that run is dead, wait for the lock to expire or rerun with "
                f"{BREAK_VARIABLE}=true."
            )
            return result
        result["message"] = f"Breaking the apps lock ({BREAK_VARIABLE}): {where} was {describe(lease, current)}."
    elif holder:
        result["message"] = f"Taking over an expired apps lock: {where} was {describe(lease, current)}."
    result["write"] = _lease(lease, namespace, identity, now, now, duration, transitions + 1)
    return result


def _lease(  # noqa: PLR0917 - private, every call passes all seven in the same order
    existing: dict[str, Any] | None,
    namespace: str,
    identity: str,
    acquired: str,
    renewed: str,
    duration: int,
    transitions: int,
) -> dict[str, Any]:
    """The Lease to write; with the resourceVersion read, so a concurrent change makes the write a conflict."""
    metadata: dict[str, Any] = {
        "name": LEASE_NAME,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "interference.orchestrator"},
    }
    if existing is not None:
        metadata["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": duration,
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        },
    }

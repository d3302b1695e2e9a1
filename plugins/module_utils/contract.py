"""What a managed pod tells a scheduler about its interference, and how to read it back.

The apps role writes both on every pod it manages; the scheduler extender
(`interference_extender/`) and the Go scheduler plugin read them:

- PROFILE_ANNOTATION: the app's pressure profile as a JSON object
  {resource: pressure}, pressures from 0 to 1, only the resources it presses
  on (`{"cpu": 1.0}` for `type: cpu`). The same key for typed and profile-only
  apps, so a reader needs no other source.
- TYPE_LABEL: `cpu`, `memory`, or `custom` for a profile-only app. Readers fall
  back to it (as the seed types' one-hot profile) only when a pod has no valid
  profile annotation, e.g. a pod written by hand.
- CPU_DEMAND_ANNOTATION, only on the pods of an app that declares `cpu_demand`:
  the CPU it would use if it had it, as whole millicores (`1500m`). What CPU
  time-sharing counts (timesharing.py); a pod without it, or with any other
  value, demands nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from .interference import PRESSURE_DIMENSIONS, TYPE_PROFILES, Profile, profile_for_type, profile_from_mapping

TYPE_LABEL = "interference.orchestrator/type"
PROFILE_ANNOTATION = "interference.orchestrator/profile"
CPU_DEMAND_ANNOTATION = "interference.orchestrator/cpu-demand"
# Whole millicores, at most 9 digits (a million cores): the only form written and read.
_CPU_DEMAND = re.compile(r"([0-9]{1,9})m")
# The type label of an app given by `profile` only.
CUSTOM_TYPE = "custom"
# Longest PROFILE_ANNOTATION value read (characters). The apps role writes at
# most ~100 (five dimensions, compact JSON); a longer value is not a profile
# and is not parsed, which also bounds its nesting (at most half the length,
# 512 levels, under the interpreter's recursion limit that json.loads needs).
MAX_PROFILE_ANNOTATION_CHARS = 1024


def profile_mapping(profile: Profile) -> dict[str, float]:
    """The non-zero pressures of a profile by resource name, in PRESSURE_DIMENSIONS order."""
    return {dim: value for dim, value in zip(PRESSURE_DIMENSIONS, profile, strict=True) if value}


def profile_annotation(profile: Profile) -> str:
    """The value of PROFILE_ANNOTATION for a profile: compact JSON, keys in PRESSURE_DIMENSIONS order."""
    return json.dumps(profile_mapping(profile), separators=(",", ":"))


def profile_from_annotation(raw: str | None) -> Profile | None:
    """The profile a PROFILE_ANNOTATION value holds, or None when it is missing or not a valid profile.

    Valid: a JSON object whose keys are all in PRESSURE_DIMENSIONS and whose
    values are numbers from 0 to 1, in at most MAX_PROFILE_ANNOTATION_CHARS
    characters. Pods are written by anyone who may create one, so any other
    value (nested 10,000 deep, megabytes long) means "no profile", never an error.
    """
    if not raw or len(raw) > MAX_PROFILE_ANNOTATION_CHARS:
        return None
    try:
        mapping = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(mapping, Mapping) or not all(
        k in PRESSURE_DIMENSIONS and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
        for k, v in mapping.items()
    ):
        return None
    return profile_from_mapping(dict(mapping))


def pod_profile(annotations: Mapping[str, str], labels: Mapping[str, str]) -> Profile | None:
    """A pod's profile: its PROFILE_ANNOTATION, else the one-hot profile of its TYPE_LABEL, else None."""
    profile = profile_from_annotation(annotations.get(PROFILE_ANNOTATION))
    if profile is not None:
        return profile
    type_label = (labels.get(TYPE_LABEL) or "").lower()
    return profile_for_type(type_label) if type_label in TYPE_PROFILES else None


def cpu_demand_annotation(millicores: int) -> str:
    """The value of CPU_DEMAND_ANNOTATION for a demand in millicores (`1500m`)."""
    return f"{millicores}m"


def pod_cpu_demand(annotations: Mapping[str, str]) -> int:
    """A pod's CPU demand in millicores: its CPU_DEMAND_ANNOTATION, 0 when missing or not `<digits>m`."""
    found = _CPU_DEMAND.fullmatch(annotations.get(CPU_DEMAND_ANNOTATION) or "")
    return int(found.group(1)) if found else 0

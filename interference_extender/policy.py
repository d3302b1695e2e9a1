"""The extender's policy: score weights, the hard co-location rule, the schedulers it decides for.

Read from the YAML file given with `--config` (the scheduler_extender role
renders it from `scheduler_extender_policy`); see docs/extender.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import InputError, PlacementError
from ansible_collections.interference.orchestrator.plugins.module_utils.sharing import (
    NO_SHARING,
    Sharing,
    parse_sharing,
)

from .facts import PodFacts

# The profile name of the second scheduler that opted-in apps use.
DEFAULT_SCHEDULER_NAME = "interference-scheduler"


class ExtenderConfigError(PlacementError):
    """The extender's policy (weights, hard rules) is invalid."""


@dataclass(frozen=True)
class ScoreWeights:
    """Weight of each prioritize component (>= 0; 0 switches a component off)."""

    interference: float = 3.0
    gpu_memory: float = 1.0
    spot: float = 1.0
    zone_spread: float = 1.0


@dataclass(frozen=True)
class ExtenderPolicy:
    """What the extender decides by: score weights and the hard co-location rule.

    `forbidden_pairs` holds unordered pairs of pod types (values of TYPE_LABEL,
    lower case) that must never share a node: {"memory"} alone means two
    memory pods, {"cpu", "memory"} a cpu pod next to a memory pod.
    """

    weights: ScoreWeights = field(default_factory=ScoreWeights)
    forbidden_pairs: frozenset[frozenset[str]] = frozenset()
    scheduler_names: frozenset[str] = frozenset({DEFAULT_SCHEDULER_NAME})
    # What nodes of one group (a host) share: the engine's `sharing` option (plugins/module_utils/sharing.py).
    sharing: Sharing = NO_SHARING

    def decides_for(self, pod: PodFacts) -> bool:
        """True when the pod is scheduled by one of `scheduler_names` (empty: every pod).

        Extenders in a KubeSchedulerConfiguration serve every profile of that
        scheduler; pods of the other profiles pass through untouched.
        """
        return not self.scheduler_names or not pod.scheduler_name or pod.scheduler_name in self.scheduler_names


def policy_from_mapping(data: object) -> ExtenderPolicy:
    """Validate the policy part of the extender's config file.

    Shape: {weights: {interference, gpu_memory, spot, zone_spread}: numbers >= 0,
    forbidden_pairs: [[type, type], ...], scheduler_names: [name, ...],
    sharing: {label, pressures: {resource: 0..1}} or null}; every key is optional.
    """
    if data is None:
        return ExtenderPolicy()
    if not isinstance(data, Mapping):
        raise ExtenderConfigError(f"policy must be a mapping, got {type(data).__name__}")
    unknown = set(data) - {"weights", "forbidden_pairs", "scheduler_names", "sharing"}
    if unknown:
        raise ExtenderConfigError(f"unknown policy keys: {', '.join(sorted(map(str, unknown)))}")
    raw_weights = data.get("weights") or {}
    if not isinstance(raw_weights, Mapping):
        raise ExtenderConfigError("weights must be a mapping of component to number")
    defaults = ScoreWeights()
    values: dict[str, float] = {}
    for name in ("interference", "gpu_memory", "spot", "zone_spread"):
        value = raw_weights.get(name, getattr(defaults, name))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or not math.isfinite(value):
            raise ExtenderConfigError(f"weights.{name} must be a number >= 0, got {value!r}")
        values[name] = float(value)
    unknown = set(raw_weights) - set(values)
    if unknown:
        raise ExtenderConfigError(f"unknown weights: {', '.join(sorted(map(str, unknown)))}")
    raw_pairs = data.get("forbidden_pairs") or []
    if not isinstance(raw_pairs, Sequence) or isinstance(raw_pairs, (str, bytes)):
        raise ExtenderConfigError("forbidden_pairs must be a list of [type, type] pairs")
    pairs = set()
    for index, pair in enumerate(raw_pairs):
        if (
            not isinstance(pair, Sequence)
            or isinstance(pair, (str, bytes))
            or len(pair) != 2
            or not all(isinstance(t, str) and t for t in pair)
        ):
            raise ExtenderConfigError(f"forbidden_pairs[{index}] must be a pair of type names, got {pair!r}")
        pairs.add(frozenset(t.lower() for t in pair))
    names = data.get("scheduler_names", [DEFAULT_SCHEDULER_NAME])
    if names is None:
        names = []
    if not isinstance(names, Sequence) or isinstance(names, (str, bytes)) or not all(
        isinstance(n, str) and n for n in names
    ):
        raise ExtenderConfigError(f"scheduler_names must be a list of scheduler names, got {names!r}")
    try:
        sharing = parse_sharing(data.get("sharing"))
    except InputError as error:
        raise ExtenderConfigError(f"{error.field}: {error.problem}") from None
    return ExtenderPolicy(
        weights=ScoreWeights(**values), forbidden_pairs=frozenset(pairs), scheduler_names=frozenset(names),
        sharing=sharing,
    )

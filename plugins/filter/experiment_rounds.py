"""Filter plugin: the rounds of an experiment, the Jobs that run together."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import build_rounds
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: experiment_rounds
short_description: The rounds of an experiment - the Jobs that run together, per policy and repeat
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the experiment role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - Per repeat, in policy order, V(baseline) gives one round per app (alone on the first node), V(pair) one round
    per pair of apps (both on the first node), any other policy one round with every app where
    its policy puts it (docs/experiment.md).
  - Bad apps, an unknown policy or too few nodes fail with a message naming them.
positional: nodes, policies, repeats
options:
  _input:
    description: The apps, as for P(interference.orchestrator.place#filter).
    type: list
    elements: dict
    required: true
  nodes:
    description: Node names or node dicts (P(interference.orchestrator.nodes_from_k8s#filter)).
    type: list
    elements: raw
    required: true
  policies:
    description: Policies, among V(baseline), V(engine), V(alternating), V(scheduler), V(worst), V(pair).
    type: list
    elements: str
    required: true
  repeats:
    description: How many times each round runs.
    type: int
    required: true
  sharing:
    description:
      - What the nodes share across nodes (C(label), C(pressures)), as the apps role's C(apps_sharing); the
        V(engine) policy plans with it, so it runs the plan C(site.yml) would make. Omitted or null - nothing.
    type: dict
  scale:
    description: RUN_BENCHMARK_SCALE of every app that O(scales) does not name.
    type: int
    default: 1
  scales:
    description:
      - RUN_BENCHMARK_SCALE per app name, so that workloads of different lengths overlap their neighbours.
      - A name that is no app, or a value that is not a whole number >= 1, fails naming it.
    type: dict
"""

EXAMPLES = r"""
- name: Two repeats of the baseline and the engine's plan
  ansible.builtin.debug:
    msg: "{{ apps | interference.orchestrator.experiment_rounds(['w1', 'w2'], ['baseline', 'engine'], 2, scales={'mbw': 16}) }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu}
      - {name: mbw, image: pts/mbw, type: memory}
"""

RETURN = r"""
_value:
  description:
    - C(plans) (policy -> app -> node), C(scales) (app -> RUN_BENCHMARK_SCALE) and C(rounds) (C(index), C(policy),
      C(repeat), C(jobs) - C(app), C(node), C(pair), C(job), C(scale)).
  type: dict
"""


def experiment_rounds(
    apps: list[dict[str, Any]], nodes: list[Any], policies: list[str], repeats: int, *, sharing: Any = None,
    scale: Any = 1, scales: Any = None,
) -> dict[str, Any]:
    """The plans and the rounds of Jobs that run together."""
    return run_engine(build_rounds, apps, nodes, policies, int(repeats), sharing=sharing, scale=scale, scales=scales)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"experiment_rounds": experiment_rounds}

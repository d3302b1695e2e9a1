"""Filter plugin: the run records of one attempt at an experiment round."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import round_runs
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: experiment_round_runs
short_description: The run records of one attempt at an experiment round, with why a run failed
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - Internal to the experiment role, not part of the collection's public interface; it may change or go without a
    deprecation period (docs/architecture.md, "Public surface").
  - A run succeeded when its Job completed and its log holds the C(RESULT {json}) line every workload image's
    C(run-benchmark) prints, with C(value), C(better) and C(wall_seconds).
  - A failed run's C(error) names the Job's conditions with their reasons, and C(termination) keeps what its pod said
    of its end (evicted, OOM-killed, exit code, never started).
  - When a run failed and O(attempt) is below O(attempts), every run of the attempt is marked C(superseded), since the
    round is run again; superseded runs give no figure.
positional: jobs, pods, logs, start_at
options:
  _input:
    description: The round (C(index), C(policy), C(repeat), C(jobs)), as P(interference.orchestrator.experiment_rounds#filter) gives it.
    type: dict
    required: true
  jobs:
    description: The round's Job objects (M(kubernetes.core.k8s_info) C(resources)).
    type: list
    elements: dict
    required: true
  pods:
    description: The round's Pod objects.
    type: list
    elements: dict
    required: true
  logs:
    description: Each Job's log, by Job name.
    type: dict
    required: true
  start_at:
    description: The moment the round's workloads started, in epoch seconds.
    type: int
    required: true
  attempt:
    description: Which attempt at the round this is, from 1 (by keyword).
    type: int
    default: 1
  attempts:
    description: How many attempts the round may have (by keyword).
    type: int
    default: 1
"""

EXAMPLES = r"""
- name: Record a round whose Job completed with a result
  ansible.builtin.debug:
    msg: "{{ round | interference.orchestrator.experiment_round_runs(jobs, [], logs, 1796363517, attempt=1, attempts=2) }}"
  vars:
    round: {index: 0, policy: baseline, repeat: 0, jobs: [{app: mbw, node: w1, pair: null}]}
    jobs: [{metadata: {name: exp-r0-mbw}, status: {conditions: [{type: Complete, status: "True"}]}}]
    logs:
      exp-r0-mbw: 'RESULT {"value": 5123.4, "better": "higher", "wall_seconds": 2.3}'
"""

RETURN = r"""
_value:
  description: >-
    One record per Job of the round - C(round), C(policy), C(repeat), C(attempt), C(app), C(pair), C(job),
    C(planned_node), C(node), C(start_at), C(status) (C(succeeded) or C(failed)), C(result), C(error),
    C(termination), C(log), C(superseded).
  type: list
  elements: dict
"""


def experiment_round_runs(
    experiment_round: dict[str, Any],
    jobs: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    logs: dict[str, str],
    start_at: int,
    *,
    attempt: int = 1,
    attempts: int = 1,
) -> list[dict[str, Any]]:
    """The run records of one attempt at a round."""
    return run_engine(round_runs, experiment_round, jobs, pods, logs, int(start_at), attempt=attempt, attempts=attempts)


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"experiment_round_runs": experiment_round_runs}

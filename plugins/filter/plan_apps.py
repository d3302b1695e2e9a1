"""Filter plugin: the apps role's plan for one run (every app checked, pinned apps placed, facts per app)."""

from __future__ import annotations

from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.apps_plan import plan_apps as compute_plan
from ansible_collections.interference.orchestrator.plugins.plugin_utils.placement_boundary import run_engine

DOCUMENTATION = r"""
name: plan_apps
short_description: Check every app, place the pinned ones, and return the plan with its report in one call
version_added: 0.1.0
author: interference.orchestrator maintainers
description:
  - The one placement call of the apps role per run. It validates every app (an error names the app by its index
    in the input and the field), places the apps whose C(scheduler) is not V(extender) as
    P(interference.orchestrator.place#filter) does, and returns per app the facts its Deployment and the
    schedulers read, with the report of P(interference.orchestrator.placement_report#filter).
  - Given O(deployment), the apps role's settings, it also returns C(manifests), the Deployment of every app, which
    the apps role applies as they are.
  - C(profile_annotation) is the value of the pod annotation C(interference.orchestrator/profile), a JSON object
    resource to pressure, the same for apps given by C(type) and by C(profile). The scheduler extender reads it.
  - C(cpu_demand_annotation) is the value of the pod annotation C(interference.orchestrator/cpu-demand), the app's
    C(cpu_demand) in whole millicores (V(1500m)), or null for an app that declares none. The extender and the
    InterferenceAware plugin count it as the engine does (CPU time-sharing).
  - When the plan still has interference, C(report.warning) of the result names the colliding apps (the filter is pure and
    prints nothing; the apps role prints it); O(strict=true) makes that an error.
  - An app whose Deployment annotations (its item as JSON and one planned node per replica) would exceed 32 KiB is
    an error naming it, as Kubernetes limits all annotations of an object to 256 KiB and the apply copies them.
positional: nodes
extends_documentation_fragment:
  - interference.orchestrator.placement
  - interference.orchestrator.placement.strict
  - interference.orchestrator.placement.sharing
options:
  _input:
    description: The apps, as for P(interference.orchestrator.place#filter); C(scheduler=extender) leaves an app to
      the scheduler extender (checked, not placed).
    type: list
    elements: dict
    required: true
  deployment:
    description:
      - The settings every Deployment is built with. Without it the result has no C(manifests).
      - C(namespace) (required), C(command) (required, the container command of apps that give none),
        C(security_context) (the container securityContext each app's own is merged over),
        C(automount_service_account_token), C(scheduler_name) and C(plugins_scheduler_name) (the schedulerName of
        apps with C(scheduler=extender) and C(scheduler=plugins)), C(image_refs) (image to the reference to use
        instead) and C(owner) (the value of the label C(interference.orchestrator/apps-owner) on each Deployment,
        which the apps role prunes by; empty for none).
    type: dict
  max_moves:
    description:
      - With O(rebalance=true), keep the running replicas (O(previous)) and move at most this many of them, each by
        the single-replica move that lowers the total interference most, stopping when none does. Pinned apps never
        move. Without it, O(rebalance=true) places every app afresh.
      - A whole number from 0 to 10,000.
    type: int
  move_from:
    description:
      - With O(max_moves), only replicas running on these nodes may move (playbooks/rebalance.yml gives the nodes
        whose measured pressure stayed above its threshold). Every name must be a node of O(nodes).
    type: list
    elements: str
  hold:
    description:
      - With O(max_moves), the apps that never move (playbooks/rebalance.yml gives those a PodDisruptionBudget
        allows no disruption of). Every name must be an app of the input.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Plan a CPU-bound app, a profile-only app and one left to the scheduler extender
  ansible.builtin.set_fact:
    apps_plan: "{{ apps | interference.orchestrator.plan_apps(['worker1', 'worker2']) }}"
  vars:
    apps:
      - {name: c-ray, image: pts/c-ray, type: cpu, replicas: 2}
      - {name: cache-heavy, image: pts/mbw, profile: {llc: 0.5, disk_io: 1}}
      - {name: mbw, image: pts/mbw, type: memory, scheduler: extender}

- name: Show where c-ray runs and what its pods will be annotated with
  ansible.builtin.debug:
    msg: "{{ apps_plan.apps[0].nodes }} {{ apps_plan.apps[0].profile_annotation }}"
"""

RETURN = r"""
_value:
  description: The plan of this run.
  type: dict
  contains:
    apps:
      description:
        - One entry per app, in input order, with C(name); C(app), the input item with its enumerations
          (C(type), C(scheduler), C(profile_from), the resources of C(profile)) in lower case; C(extender), true for
          an app left to the scheduler extender or the plugins build; C(scheduler), that value; C(nodes), one node
          name per replica (empty for extender apps); C(type_label), V(cpu), V(memory) or V(custom) for a
          profile-only app; C(profile), the non-zero pressures by resource; C(profile_annotation), that profile as
          compact JSON; C(cpu_demand_annotation), the app's C(cpu_demand) as V(<millicores>m) or null;
          C(annotations), the Deployment's annotations C(interference.orchestrator/planned-nodes) (pinned apps)
          and C(interference.orchestrator/app) (C(app) as JSON), at most 32 KiB together.
      type: list
      elements: dict
    report:
      description: The report of the placed apps, as P(interference.orchestrator.placement_report#filter) returns it.
      type: dict
    manifests:
      description:
        - With O(deployment) only. One apps/v1 Deployment per app, in the order of C(apps). Pinned apps get a
          C(kubernetes.io/hostname) nodeSelector (one planned node) or a required node affinity and a topology
          spread whose maxSkew is the plan's own (several), and the Recreate strategy; apps left to a scheduler
          get its schedulerName. Every pod carries the type label and the profile annotation.
      type: list
      elements: dict
"""


def plan_apps(
    apps: list[dict[str, Any]],
    nodes: list[Any],
    previous: dict[str, Any] | None = None,
    rebalance: bool = False,
    strict: bool = False,
    *,
    deployment: dict[str, Any] | None = None,
    sharing: dict[str, Any] | None = None,
    max_moves: int | None = None,
    move_from: list[str] | None = None,
    hold: list[str] | None = None,
) -> dict[str, Any]:
    """Return {apps, report} (and `manifests` given `deployment`) for one run of the apps role."""
    plan = run_engine(
        compute_plan, apps, nodes, previous=previous, rebalance=rebalance, strict=strict, deployment=deployment,
        sharing=sharing, max_moves=max_moves, move_from=move_from, hold=hold,
    )
    return plan


class FilterModule:
    """Ansible filter plugin entry point."""

    def filters(self) -> dict[str, Any]:
        return {"plan_apps": plan_apps}

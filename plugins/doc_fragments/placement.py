"""Documentation fragments of the placement filters' shared options (place, placement_report, plan_apps;
measured_profiles and profile_sources: PROFILE_SOURCES)."""

from __future__ import annotations


class ModuleDocFragment:
    """The apps, the nodes and the current placement, as every placement filter takes them."""

    DOCUMENTATION = r"""
options:
  _input:
    description:
      - The apps. Each is a dict with C(name) (DNS-1123 label), C(image), and C(type) (V(cpu) or V(memory), any
        case) or C(profile) (pressures from 0 to 1 over V(cpu), V(memory_bandwidth), V(llc), V(disk_io),
        V(network_io)).
      - Optional keys are C(replicas) (default 1), C(resources.requests.cpu) and C(resources.requests.memory)
        (Kubernetes quantities), C(gpus), C(node_selector), C(node) and C(cpu_demand) (cores the app would use,
        for the CPU time-sharing the plan then counts). Other keys are kept as they are.
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - Node names, or dicts C({name, labels, allocatable}) with allocatable C(cpu), C(memory), C(pods) and
        C(nvidia.com/gpu) as Kubernetes quantities (a missing one does not limit; missing GPUs mean none).
      - P(interference.orchestrator.nodes_from_k8s#filter) builds this list from M(kubernetes.core.k8s_info).
    type: list
    elements: raw
    required: true
  previous:
    description:
      - The current placement, app name to the list of its nodes, as read back from the cluster.
      - Every replica that still fits stays where it is, so adding an app never moves a running one.
      - Apps that are not in the input are ignored; a node that is not in O(nodes) is an error.
    type: dict
  rebalance:
    description:
      - Ignore O(previous) and place every app afresh.
      - P(interference.orchestrator.plan_apps#filter) with C(max_moves) keeps the running replicas instead and moves
        only that many.
    type: bool
    default: false
"""

    STRICT = r"""
options:
  strict:
    description: Fail instead of warning when the plan still has interference.
    type: bool
    default: false
"""

    SEARCH_EFFORT = r"""
options:
  search_effort:
    description:
      - Trades time for plan quality. After the greedy plan and its local search, a simulated annealing over
        relocations and swaps of replicas runs for a number of proposed moves derived from the instance size
        (at most 2,000 per replica on small instances, at least 100 per replica on large ones), times this
        factor. It never depends on a clock, so the same input always gives the same plan.
      - V(0) turns the annealing off (greedy and local search only). V(10) searches about ten times as long.
      - The annealing is skipped when the plan is already within 1% / O(search_effort) of the lower bound, and
        when the exact search (up to 16 replicas to place) runs instead. Pass the same value to
        P(interference.orchestrator.place#filter) and P(interference.orchestrator.placement_report#filter) so the
        report explains the plan that is applied.
    type: float
    default: 1.0
"""

    SHARING = r"""
options:
  sharing:
    description:
      - What nodes share. Nodes with the same value of the node label O(sharing.label) form a group (a host, a
        hypervisor, a NUMA node), and O(sharing.pressures) gives, per resource, the share from V(0) to V(1) of the
        same-node interference that two replicas on different nodes of one group still cause.
      - Two replicas with profiles p and q then score the sum over resources r of p_r q_r share_r, where share_r is
        1 on one node, O(sharing.pressures) across nodes of one group and 0 across groups. Without it (or with every
        share 0) plans are the same as without the option.
      - The report then adds C(sharing), C(cross_node_interference) (the part of C(total_interference) from pairs on
        different nodes) and C(cross_node_pairs) (the worst of them, with their group and nodes).
      - Measure the shares on the cluster with C(playbooks/isolation.yml) (its report's "Shares across workers",
        docs/monitoring.md). The scheduler extender and plugins do not read this option (docs/architecture.md).
    type: dict
    suboptions:
      label:
        description: The node label whose value names the group.
        type: str
        required: true
      pressures:
        description: Resource (V(cpu), V(memory_bandwidth), V(llc), V(disk_io), V(network_io)) to its share, 0 to 1.
        type: dict
        default: {}
"""

    PROFILE_SOURCES = r"""
options:
  _input:
    description: The apps; an app's C(profile_from) (V(measured) or V(observed)) says where its profile comes from.
    type: list
    elements: dict
    required: true
  observed:
    description: App name -> resource -> pressure (the C(observed_profiles) variable, written by playbooks/observe.yml).
    type: dict
    default: {}
"""

"""The plugin scheduler (gpu-scheduler in the tools folder) as a second scheduler on a kwok cluster.

The cluster is the one tests/support/kwok.py starts
(kwokctl, binary runtime, the real etcd, kube-apiserver,
kube-controller-manager and kube-scheduler of the tools folder; kwok-controller plays
the nodes). kwokctl's own kube-scheduler keeps the profile default-scheduler;
gpu-scheduler runs beside it as a separate process with the
KubeSchedulerConfiguration the scheduler_plugins role renders (its
scheduler_config entry point, through ansible-playbook), the way the role runs
it on kwok. Shared by the integration tests and benchmarks/schedulers.py.
"""

from __future__ import annotations

import json
import random
import ssl
import subprocess
import urllib.request
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.contract import TYPE_LABEL

from tests.support.kwok import TOOLS, KwokCluster, free_port, wait_for
from tests.support.playbook_json import run_role_entry_point

GPU_SCHEDULER = TOOLS / "gpu-scheduler"
GROUP_LABEL = "scheduler-plugins-test/group"


def render_config(directory: Path, kubeconfig: Path, extra_vars: dict[str, Any] | None = None) -> Path:
    """Run the role's scheduler_config entry point; returns the KubeSchedulerConfiguration path."""
    directory.mkdir(parents=True, exist_ok=True)
    variables = {"scheduler_plugins_local_dir": str(directory), "cluster_kubeconfig": str(kubeconfig)}
    variables.update(extra_vars or {})
    run_role_entry_point(directory, "scheduler_plugins", "scheduler_config", variables)
    return directory / "kube-scheduler-config.yaml"


def disabled_plugin_vars(disabled: list[str]) -> dict[str, Any]:
    """Role variables that switch the named plugins' scores (and GPUScheduler's filter) off."""
    keys = {"GPUScheduler": "gpu", "SpotScheduler": "spot", "AZScheduler": "zone", "InterferenceAware": "interference"}
    weights = {"gpu": 10, "spot": 5, "zone": 3, "interference": 10}
    for name in disabled:
        weights[keys[name]] = 0
    return {
        "scheduler_plugins_weights": weights,
        "scheduler_plugins_gpu_filter": "GPUScheduler" not in disabled,
        "scheduler_plugins_gpu_avoid_for_other_pods": "GPUScheduler" not in disabled,
    }


def healthz(port: int) -> int | None:
    """Status of the scheduler's https://127.0.0.1:port/healthz (self-signed), None when it does not answer."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=context, timeout=2) as response:
            return int(response.status)
    except OSError:
        return None


def metrics_text(port: int) -> str:
    """The scheduler's /metrics (kwok's local process allows anonymous reads of it)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=context, timeout=10) as response:
        return str(response.read().decode())


class SchedulerProcess:
    """One scheduler process (gpu-scheduler or the plain kube-scheduler) with its log."""

    def __init__(self, cluster: KwokCluster, config: Path, log: Path, binary: Path = GPU_SCHEDULER) -> None:
        self.port = free_port()
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(binary), f"--config={config}", f"--secure-port={self.port}", "--bind-address=127.0.0.1",
                 "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"],
                stdout=out, stderr=subprocess.STDOUT, env=cluster.env,
            )
        cluster.processes.append(self.process)
        wait_for("the scheduler to be healthy", lambda: self.process.poll() is not None or healthz(self.port) == 200)
        if self.process.poll() is not None:
            raise RuntimeError(f"{binary.name} exited: {log.read_text()[-3000:]}")


def run_until_exit(config: Path, env: dict[str, str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run gpu-scheduler with `config` and return when it exits (a bad configuration stops it)."""
    return subprocess.run(
        [str(GPU_SCHEDULER), f"--config={config}", f"--secure-port={free_port()}", "--bind-address=127.0.0.1"],
        capture_output=True, text=True, env=env, timeout=timeout, check=False,
    )


def node_body(
    name: str,
    group: str,
    *,
    labels: dict[str, str] | None = None,
    cpu: str = "16",
    memory: str = "64Gi",
    pods: int = 110,
    gpus: int = 0,
) -> dict[str, Any]:
    """A Node for kwok-controller to play, labelled with its test group."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", GROUP_LABEL: group, **(labels or {})},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def create_nodes(api: Any, bodies: list[dict[str, Any]]) -> list[str]:
    names = []
    for body in bodies:
        api.create_node(body)
        names.append(body["metadata"]["name"])

    def all_ready() -> bool:
        ready = set()
        for node in api.list_node(label_selector=f"{GROUP_LABEL}={bodies[0]['metadata']['labels'][GROUP_LABEL]}").items:
            if any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or [])):
                ready.add(node.metadata.name)
        return set(names) <= ready

    wait_for("the nodes to be Ready", all_ready)
    return names


def pod_body(
    name: str,
    group: str,
    scheduler: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod for `scheduler`, kept to its test group's nodes by a nodeSelector."""
    resources: dict[str, Any] = {}
    if requests:
        resources = {"requests": requests, "limits": {k: v for k, v in requests.items() if k == "nvidia.com/gpu"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {GROUP_LABEL: group},
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "app", "image": "fake", "resources": resources}],
        },
    }


def wait_all_bound(api: Any, namespace: str, count: int, timeout: float = 180.0) -> dict[str, str]:
    """Wait until `count` pods of the namespace are bound; returns pod name -> node name."""

    def bound() -> dict[str, str] | None:
        pods = api.list_namespaced_pod(namespace).items
        placed = {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}
        return placed if len(placed) >= count else None

    return dict(wait_for(f"{count} pods bound in {namespace}", bound, timeout=timeout))


def create_namespace(api: Any, name: str) -> None:
    api.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(
        f"the default ServiceAccount of {name}",
        lambda: any(sa.metadata.name == "default" for sa in api.list_namespaced_service_account(name).items),
    )


def burst_pods(group: str, scheduler: str, seed: int, per_type: int = 20) -> list[dict[str, Any]]:
    """`per_type` cpu-heavy and `per_type` memory-heavy pods (named <type>-<i>) in the random order of `seed`."""
    types = ["cpu"] * per_type + ["memory"] * per_type
    random.Random(seed).shuffle(types)
    return [
        pod_body(f"{kind}-{i}", group, scheduler, labels={TYPE_LABEL: kind}, requests={"cpu": "100m"})
        for i, kind in enumerate(types)
    ]


def types_per_node(placed: dict[str, str], nodes: Iterable[str]) -> dict[str, Counter[str]]:
    """Pods of each type per node, for pods named <type>-<i> (burst_pods) placed as pod -> node."""
    per_node: dict[str, Counter[str]] = {name: Counter() for name in nodes}
    for pod, node in placed.items():
        per_node[node][pod.split("-")[0]] += 1
    return per_node


def same_type_pairs(per_node: dict[str, Counter[str]]) -> int:
    """Pairs of pods of one type sharing a node (the interference of one-hot types)."""
    return sum(count * (count - 1) // 2 for counts in per_node.values() for count in counts.values())


def dump(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True)

"""The extender and the plugin scheduler in a real kind cluster, built offline.

Runs site.yml on the kind tier's shared cluster (tests/support/kind.py: one
control plane and two workers, made once per session; site.yml reuses it by
name), image_source offline: the extender image on a debootstrap base with
wheels pip downloaded on the host, and the plugin scheduler image around the
host-built binary, both built by `make images` before the tests. It runs the
scheduler_extender and scheduler_plugins roles' in-cluster path (site.yml tags
extender and plugins, apps that opt in to each), and checks that both run
under their hardened securityContext (non-root 65532, read-only root, runtime
seccomp), that a pod of each schedulerName is bound by its own scheduler, that
`kubectl auth can-i --as` each ServiceAccount shows the narrowed RBAC, and
that a second run changes nothing. Needs a
Docker engine, kind and gpu-scheduler in the tools folder; skipped with the reason
when one is missing. KIND_NODE_IMAGE names a node image to use instead of the
offline one.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kind, rbac

from .test_experiment_kind import TOOLS_BIN, VENV_BIN, docker_answers, free_port, tail

REPO = Path(__file__).resolve().parents[2]
CLUSTER = kind.SHARED_NAME
NAMESPACE = "kube-system"
# The probe pods go where the apps go: the schedulers may bind pods only in the apps
# namespace (scheduler_*_bind_namespaces default to apps_namespace), not in `default`.
# One of this module's own: the shared cluster's interference-apps is the registry test's.
PODS_NAMESPACE = "scheduler-probes"
# site.yml runs each role only when some app opts in; the apps themselves are not deployed (no `apps` tag).
OPTED_IN_APPS = [
    {"name": "web", "image": "pts/mbw", "type": "memory", "scheduler": "extender"},
    {"name": "trainer", "image": "pts/c-ray", "type": "cpu", "scheduler": "plugins"},
]
# Each scheduler under test, the Deployment that runs it and its image's name.
SCHEDULERS = {
    "interference-scheduler": "interference-extender",
    "gpu-scheduler": "interference-gpu-scheduler",
}
# Every kind node image carries it (kubeadm's sandbox image), so the probe pods pull nothing.
PROBE_IMAGE = "registry.k8s.io/pause:3.10.1"

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.kind,
    pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers (`docker info`): kind cannot run"),
    pytest.mark.skipif(not (TOOLS_BIN / "kind").exists(), reason=f"no kind in {TOOLS_BIN}: run `make tools` first"),
    pytest.mark.skipif(not (TOOLS_BIN / "gpu-scheduler").exists(),
                       reason=f"no gpu-scheduler in {TOOLS_BIN}: run `scripts/build-tools.sh gpu-scheduler` first"),
]


def site(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    args = [str(VENV_BIN / "ansible-playbook"), "site.yml", "-e", "cluster_provider=kind",
            "-e", f"cluster_name={CLUSTER}", "-e", "image_source=offline", "-e", "cluster_workers=2",
            "-e", f"apps_namespace={PODS_NAMESPACE}",
            "-e", json.dumps({"apps": OPTED_IN_APPS}), *extra]
    if os.environ.get("KIND_NODE_IMAGE"):
        args += ["-e", f"kind_cluster_node_image={os.environ['KIND_NODE_IMAGE']}"]
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    run = subprocess.run([str(TOOLS_BIN / "kubectl"), "--context", f"kind-{CLUSTER}", *args], env=env, input=stdin,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, f"kubectl {' '.join(args)}: {run.stderr}"
    return run.stdout


def kubectl_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(kubectl(env, *args, "-o", "json"))


def recap_changed(run: subprocess.CompletedProcess[str]) -> int:
    # The default callback's recap line: "localhost : ok=N changed=N ...".
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("localhost") and "changed=" in line]
    return int(line.split("changed=")[1].split()[0])


@pytest.fixture(scope="module")
def cluster(shared_kind: kind.KindCluster) -> Iterator[dict[str, str]]:
    # The kind tier's shared cluster (tests/integration/conftest.py): site.yml finds
    # it by name and reuses it, so this module pays for no cluster of its own.
    env = {**shared_kind.env, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
    # kind publishes Grafana's and Prometheus' ports even with monitoring skipped:
    # 3000 and 9090 may belong to another cluster.
    ports = ["-e", f"grafana_host_port={free_port()}", "-e", f"prometheus_host_port={free_port()}"]
    created = site(env, "--tags", "cluster,extender,plugins", *ports)
    assert created.returncode == 0, tail(created)
    yield env


def available(deployment: dict[str, Any]) -> bool:
    conditions = deployment.get("status", {}).get("conditions", [])
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


@pytest.mark.parametrize("deployment", sorted(SCHEDULERS))
def test_scheduler_deployment_is_available_hardened_with_its_offline_image(
    cluster: dict[str, str], deployment: str
) -> None:
    # The extender's scheduler runs the upstream kube-scheduler; the extender itself is the image built here.
    names = [deployment, "interference-extender"] if deployment == "interference-scheduler" else [deployment]
    for name in names:
        found = kubectl_json(cluster, "-n", NAMESPACE, "get", "deployment", name)
        assert available(found), json.dumps(found.get("status"))
        pod_spec = found["spec"]["template"]["spec"]
        assert pod_spec["securityContext"]["runAsUser"] == 65532
        assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in pod_spec["containers"])
    built = kubectl_json(cluster, "-n", NAMESPACE, "get", "deployment", names[-1])
    image = built["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith(f"{SCHEDULERS[deployment]}:h-"), image
    # The process really runs as 65532 (the image's USER and the pod's runAsUser agree).
    pods = kubectl_json(cluster, "-n", NAMESPACE, "get", "pods", "-l", f"app.kubernetes.io/name={names[-1]}")["items"]
    assert pods and all(s["ready"] for p in pods for s in p["status"]["containerStatuses"])


def probe_pod(name: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": PODS_NAMESPACE, "labels": {"interference.orchestrator/type": "cpu"}},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "probe", "image": PROBE_IMAGE, "imagePullPolicy": "IfNotPresent",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        },
    }


def wait_for_node(env: dict[str, str], name: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        node = kubectl(env, "-n", PODS_NAMESPACE, "get", "pod", name, "-o", "jsonpath={.spec.nodeName}").strip()
        if node or time.monotonic() > deadline:
            return node
        time.sleep(2)


def scheduled_by(env: dict[str, str], pod: str, timeout: float = 60) -> list[str]:
    # The scheduler's event broadcaster posts the Scheduled event after the binding, asynchronously, so the
    # pod can have its node before the event exists: wait for the event rather than read it once.
    deadline = time.monotonic() + timeout
    while True:
        events = kubectl_json(env, "-n", PODS_NAMESPACE, "get", "events",
                              "--field-selector", f"involvedObject.name={pod},reason=Scheduled")
        found = [e.get("reportingComponent") or e["source"].get("component", "") for e in events["items"]]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(2)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_a_pod_with_the_scheduler_name_is_bound_by_that_scheduler(cluster: dict[str, str], scheduler: str) -> None:
    pod = f"probe-{scheduler}"
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(probe_pod(pod, scheduler)))
    try:
        node = wait_for_node(cluster, pod)
        assert node.startswith(f"{CLUSTER}-worker"), kubectl(cluster, "-n", PODS_NAMESPACE, "describe", "pod", pod)
        assert scheduled_by(cluster, pod) == [scheduler]
        if scheduler == "gpu-scheduler":
            log = kubectl(cluster, "-n", NAMESPACE, "logs", "deployment/gpu-scheduler")
            assert "Successfully bound pod to node" in log and f"{PODS_NAMESPACE}/{pod}" in log, log[-3000:]
        else:
            # The extender answered the filter call of this scheduler (its own counter, read through the API
            # server's service proxy; over HTTPS, scheduler_extender_tls's default, and /metrics needs no client
            # certificate).
            metrics = kubectl(cluster, "get", "--raw",
                              f"/api/v1/namespaces/{NAMESPACE}/services/https:interference-extender:http/proxy/metrics")
            filtered = [line for line in metrics.splitlines()
                        if line.startswith("interference_extender_requests_total{") and 'verb="filter"' in line
                        and 'code="200"' in line]
            assert filtered and float(filtered[0].split()[-1]) >= 1, metrics[-3000:]
    finally:
        kubectl(cluster, "-n", PODS_NAMESPACE, "delete", "pod", pod, "--wait=false", "--ignore-not-found")


def test_the_service_accounts_have_only_the_narrowed_rights(cluster: dict[str, str]) -> None:
    def can_i(account: str, verb: str, resource: str, namespace: str) -> bool:
        return rbac.can_i([str(TOOLS_BIN / "kubectl"), "--context", f"kind-{CLUSTER}"], account, verb, resource,
                          namespace, account_namespace=NAMESPACE, env=cluster)

    extender, schedulers = "interference-extender", sorted(SCHEDULERS)
    # Bindings only in the apps namespace (scheduler_*_bind_namespaces' default), for the
    # extender and both schedulers.
    for account in (extender, *schedulers):
        assert can_i(account, "create", "pods/binding", PODS_NAMESPACE), account
        assert not can_i(account, "create", "pods/binding", "default"), account
        assert not can_i(account, "create", "pods/binding", "kube-system"), account
    # The extender reads and writes nothing else.
    assert can_i(extender, "list", "pods", "default")
    assert not can_i(extender, "delete", "pods", PODS_NAMESPACE)
    assert not can_i(extender, "update", "leases", NAMESPACE)
    # Each scheduler: its own Lease only, never the default scheduler's.
    for scheduler in schedulers:
        assert can_i(scheduler, "update", f"leases/{scheduler}", NAMESPACE), scheduler
        assert not can_i(scheduler, "update", "leases/kube-scheduler", NAMESPACE), scheduler


def test_a_second_run_changes_nothing(cluster: dict[str, str]) -> None:
    again = site(cluster, "--tags", "extender,plugins")
    assert again.returncode == 0, tail(again)
    assert recap_changed(again) == 0, tail(again)

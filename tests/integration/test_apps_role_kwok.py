"""node_labels and apps against a real control plane (kwok), through ansible-playbook.

A kwokctl cluster runs the real etcd, kube-apiserver, kube-controller-manager
and kube-scheduler from the tools folder; kwok-controller plays the kubelets, so the
Deployments the role applies get real ReplicaSets and pods that the real
scheduler binds. The nodes mirror kind (a control plane and workers named
<cluster>-worker, -worker2, ...), with a -worker10 to check natural ordering.
Everything is read back through the API.

The tests run in order on one cluster: check mode on the fresh cluster, the
first run (labels and Deployments), idempotence and check mode, adding an app,
bad input, an app the API server refuses, removing an app, apps_prune off.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kwok
from tests.support.playbook_json import REPO, VENV_BIN, PlaybookRun, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

CLUSTER = "cluster-kind"
WORKERS = [f"{CLUSTER}-worker", f"{CLUSTER}-worker2", f"{CLUSTER}-worker10"]
CONTROL_PLANE = f"{CLUSTER}-control-plane"
NAMESPACE = "interference-apps"
MANAGED = "app.kubernetes.io/managed-by=interference.orchestrator"
PLANNED = "interference.orchestrator/planned-nodes"
SEED_APPS = yaml.safe_load((REPO / "examples" / "testbed" / "group_vars" / "all" / "apps.yml").read_text())["apps"]
WEB = {"name": "web", "image": "nginx:1.27", "type": "cpu", "replicas": 2,
       "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}}


def node(name: str, control_plane: bool = False) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    spec: dict[str, Any] = {}
    if control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        spec["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": spec,
        "status": {"allocatable": capacity, "capacity": capacity},
    }


class Cluster:
    def __init__(self, cluster: kwok.KwokCluster, tmp: Path) -> None:
        from kubernetes import client, config

        self.kwok = cluster
        self.tmp = tmp
        api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        # Any: the typed client would need a None check on every metadata access.
        self.core: Any = client.CoreV1Api(api_client)
        self.apps: Any = client.AppsV1Api(api_client)

    def run(self, apps: list[dict[str, Any]], *, check: bool = False, **extra: Any) -> PlaybookRun:
        plays = [
            {
                "name": "Label the workers and place the apps",
                "hosts": "localhost",
                "gather_facts": False,
                "roles": [
                    {"role": "interference.orchestrator.node_labels"},
                    {"role": "interference.orchestrator.apps"},
                ],
            }
        ]
        variables = {
            "cluster_kubeconfig": str(self.kwok.kubeconfig),
            "cluster_context": f"kwok-{self.kwok.name}",
            "apps": apps,
            "apps_wait_timeout": 120,
            **extra,
        }
        return run_playbook(self.tmp, plays, variables, check=check)

    def deployments(self) -> dict[str, Any]:
        found = self.apps.list_namespaced_deployment(NAMESPACE, label_selector=MANAGED).items
        return {d.metadata.name: d for d in found}

    def pods(self) -> dict[str, list[Any]]:
        """Live (not terminating) pods per app."""
        result: dict[str, list[Any]] = {}
        for pod in self.core.list_namespaced_pod(NAMESPACE, label_selector=MANAGED).items:
            if pod.metadata.deletion_timestamp is None:
                result.setdefault(pod.metadata.labels["app.kubernetes.io/name"], []).append(pod)
        return result

    def pod_uids(self) -> dict[str, list[str]]:
        return {app: sorted(p.metadata.uid for p in pods) for app, pods in self.pods().items()}

    def wait_pods_settled(self) -> None:
        """Pods of deleted Deployments are removed by the garbage collector, asynchronously."""
        kwok.wait_for(
            "the pods of deleted Deployments to go",
            lambda: set(self.pods()) <= set(self.deployments()),
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("apps-kwok")
    kwok_cluster = kwok.KwokCluster(name=f"apps-it-{kwok.free_port()}", workdir=workdir)
    kwok_cluster.create()
    try:
        state = Cluster(kwok_cluster, workdir)
        for body in [node(CONTROL_PLANE, control_plane=True), *(node(name) for name in WORKERS)]:
            state.core.create_node(body)
        yield state
    finally:
        delete(kwok_cluster)


def delete(cluster: kwok.KwokCluster) -> None:
    """Stop and remove the cluster. (`kwokctl delete cluster --kubeconfig ""` fails with
    "empty path" and leaves the processes running, so point it at a throwaway file.)"""
    subprocess.run(
        [str(kwok.TOOLS / "kwokctl"), "delete", "cluster", "--name", cluster.name,
         "--kubeconfig", str(cluster.workdir / "discarded-kubeconfig.yaml")],
        check=True, env=cluster.env, capture_output=True,
    )


def test_check_mode_on_a_fresh_cluster_changes_nothing(cluster: Cluster) -> None:
    run = cluster.run([*SEED_APPS, WEB], check=True)
    assert run.returncode == 0, run.failures()
    assert run.stats["changed"] == 1  # the labels it would set
    labels = [n.metadata.labels for n in cluster.core.list_node().items]
    assert all("group" not in node_labels for node_labels in labels)
    namespaces = [ns.metadata.name for ns in cluster.core.list_namespace().items]
    assert NAMESPACE not in namespaces
    assert any("the apps are placed once the node_labels role has really run" in m for m in run.messages())


def test_first_run_labels_workers_in_natural_order_and_deploys_the_plan(cluster: Cluster) -> None:
    run = cluster.run([*SEED_APPS, WEB])
    assert run.returncode == 0, run.failures()
    labels: dict[str, dict[str, str]] = {n.metadata.name: n.metadata.labels for n in cluster.core.list_node().items}
    assert [labels[name].get("group") for name in WORKERS] == ["node1", "node2", "node3"]
    assert "group" not in labels[CONTROL_PLANE]

    deployments = cluster.deployments()
    assert sorted(deployments) == sorted([app["name"] for app in SEED_APPS] + ["web"])
    pods = cluster.pods()
    for name, deployment in deployments.items():
        planned = deployment.metadata.annotations[PLANNED].split(",")
        assert Counter(p.spec.node_name for p in pods[name]) == Counter(planned), name
        assert all(p.status.phase == "Running" for p in pods[name])
    assert len(set(deployments["web"].metadata.annotations[PLANNED].split(","))) == 2
    # Four cpu pods (c-ray, compress-7zip, web x2) on three workers: one pair is
    # unavoidable, two are not; the two memory apps need not share.
    cpu_per_node = Counter(
        p.spec.node_name for p in [*pods["c-ray"], *pods["compress-7zip"], *pods["web"]]
    )
    assert sorted(cpu_per_node.values()) == [1, 1, 2]
    assert pods["mbw"][0].spec.node_name != pods["stressapptest"][0].spec.node_name
    assert any("INTERFERENCE" in line for line in run.messages())
    # The role's default hardening, as the API server stored it.
    for name, deployment in deployments.items():
        spec = deployment.spec.template.spec
        assert spec.automount_service_account_token is False, name
        context = spec.containers[0].security_context
        assert context.allow_privilege_escalation is False, name
        assert context.capabilities.drop == ["ALL"], name
        assert context.seccomp_profile.type == "RuntimeDefault", name
        assert context.run_as_non_root is False, name


def test_second_run_and_check_mode_change_nothing(cluster: Cluster) -> None:
    before = cluster.pod_uids()
    again = cluster.run([*SEED_APPS, WEB])
    assert again.returncode == 0, again.failures()
    assert again.stats["changed"] == 0
    check = cluster.run([*SEED_APPS, WEB], check=True)
    assert check.returncode == 0, check.failures()
    assert check.stats["changed"] == 0
    assert cluster.pod_uids() == before


def test_check_mode_into_a_namespace_not_created_yet_shows_the_manifests_and_creates_nothing(cluster: Cluster) -> None:
    """A check run takes no lock, so only its own dry run of the namespace says that it does not exist yet."""
    namespace = "interference-apps-not-yet"
    run = cluster.run([*SEED_APPS, WEB], check=True, apps_namespace=namespace)
    assert run.returncode == 0, run.failures()
    [shown] = [r for r in run.results("Show the Deployments that would be created in the new namespace")
               if not r.get("skipped")]
    assert sorted(d["metadata"]["name"] for d in shown["msg"]) == sorted(a["name"] for a in [*SEED_APPS, WEB])
    assert {d["metadata"]["namespace"] for d in shown["msg"]} == {namespace}
    assert namespace not in [ns.metadata.name for ns in cluster.core.list_namespace().items]


def test_adding_an_app_moves_no_running_pod(cluster: Cluster) -> None:
    before = cluster.pod_uids()
    added = {"name": "ramspeed", "image": "pts/ramspeed", "type": "memory"}
    check = cluster.run([*SEED_APPS, WEB, added], check=True)
    assert check.returncode == 0, check.failures()
    assert check.stats["changed"] > 0
    assert "ramspeed" not in cluster.deployments(), "check mode created the Deployment"

    run = cluster.run([*SEED_APPS, WEB, added])
    assert run.returncode == 0, run.failures()
    after = cluster.pod_uids()
    assert {app: after[app] for app in before} == before
    assert len(after["ramspeed"]) == 1


def test_bad_app_fails_before_anything_is_applied_or_pruned(cluster: Cluster) -> None:
    before = cluster.pod_uids()
    deployments = {name: d.metadata.uid for name, d in cluster.deployments().items()}
    bad = {"name": "broken", "image": "x", "type": "gpu"}
    # The list also drops web and ramspeed: pruning them must not happen either.
    run = cluster.run([*SEED_APPS, bad])
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    assert "apps[4] (broken): field 'type': unknown type 'gpu'" in output
    assert "Traceback" not in output
    assert {name: d.metadata.uid for name, d in cluster.deployments().items()} == deployments
    assert cluster.pod_uids() == before


def test_an_app_the_api_server_refuses_fails_the_run_before_anything_is_applied_or_pruned(cluster: Cluster) -> None:
    """ramspeed leaves the list and a new app's Deployment is refused: ramspeed must not be pruned.

    `privileged: true` passes the app checks (it is a legitimate relaxation),
    but merged over the role's allowPrivilegeEscalation false it is a
    combination only the API server refuses.
    """
    deployments = {name: (d.metadata.uid, d.metadata.resource_version) for name, d in cluster.deployments().items()}
    assert "ramspeed" in deployments
    pods = {app: {p.metadata.uid: p.metadata.resource_version for p in found} for app, found in cluster.pods().items()}
    refused = {"name": "refused", "image": "pts/c-ray", "type": "memory", "security_context": {"privileged": True}}
    run = cluster.run([*SEED_APPS, WEB, refused])
    output = json.dumps(run.report) + run.stderr
    assert run.returncode != 0
    [failed] = [r for r in run.results("Stop when the API server refuses a Deployment") if r.get("failed")]
    assert failed["msg"].startswith("The API server refuses 1 app(s); nothing was applied or deleted. ")
    assert (
        "apps[5] (refused): refused by the API server: field 'spec.template.spec.containers[0].securityContext'"
        in failed["msg"]
    )
    assert "cannot set `allowPrivilegeEscalation` to false and `privileged` to true" in failed["msg"]
    assert "Traceback" not in output
    assert not run.results("Apply the Deployments"), "nothing may be applied after a refusal"
    after = {name: (d.metadata.uid, d.metadata.resource_version) for name, d in cluster.deployments().items()}
    assert after == deployments, "a Deployment was created, changed or deleted"
    assert {app: {p.metadata.uid: p.metadata.resource_version for p in found}
            for app, found in cluster.pods().items()} == pods


def test_removing_an_app_deletes_only_its_deployment(cluster: Cluster) -> None:
    before = cluster.pod_uids()
    deployments = {name: d.metadata.uid for name, d in cluster.deployments().items()}
    check = cluster.run([*SEED_APPS, WEB], check=True)
    assert check.returncode == 0, check.failures()
    assert "ramspeed" in cluster.deployments(), "check mode deleted the Deployment"

    run = cluster.run([*SEED_APPS, WEB])
    assert run.returncode == 0, run.failures()
    cluster.wait_pods_settled()
    kept = {name: uid for name, uid in deployments.items() if name != "ramspeed"}
    assert {name: d.metadata.uid for name, d in cluster.deployments().items()} == kept
    assert cluster.pod_uids() == {app: uids for app, uids in before.items() if app != "ramspeed"}


def test_apps_prune_off_keeps_unlisted_apps_and_places_around_them(cluster: Cluster) -> None:
    """What playbooks/add_app.yml relies on: earlier one-off apps stay and count in the plan."""
    first = {"name": "one-off-a", "image": "pts/c-ray", "type": "cpu"}
    second = {"name": "one-off-b", "image": "pts/c-ray", "type": "cpu"}
    run = cluster.run([*SEED_APPS, WEB, first], apps_prune=False)
    assert run.returncode == 0, run.failures()
    before = cluster.pod_uids()
    run = cluster.run([*SEED_APPS, WEB, second], apps_prune=False)
    assert run.returncode == 0, run.failures()
    assert {app: uids for app, uids in cluster.pod_uids().items() if app in before} == before
    planned = {name: d.metadata.annotations[PLANNED] for name, d in cluster.deployments().items()}
    # Three workers: the seed cpu apps, one-off-a and web's replicas fill them; one-off-b
    # must not go where one-off-a already is (the plan counted it).
    assert planned["one-off-b"] != planned["one-off-a"]
    run = cluster.run([*SEED_APPS, WEB])
    assert run.returncode == 0, run.failures()
    cluster.wait_pods_settled()
    assert sorted(cluster.deployments()) == sorted([app["name"] for app in SEED_APPS] + ["web"])


def test_add_app_playbook_adds_one_app_and_keeps_everything_else(cluster: Cluster) -> None:
    """playbooks/add_app.yml as a user runs it (provider `existing`, pointed at this cluster)."""
    # The cluster runs the seed apps and web; web is not in group_vars but must survive.
    before = cluster.pod_uids()
    assert "web" in before
    args = [
        str(VENV_BIN / "ansible-playbook"), "playbooks/add_app.yml",
        "-e", json.dumps({
            "cluster_provider": "existing",
            "cluster_kubeconfig": str(cluster.kwok.kubeconfig),
            "cluster_context": f"kwok-{cluster.kwok.name}",
            "app": {"name": "x264", "image": "pts/x264", "type": "cpu"},
        }),
    ]
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    after = cluster.pod_uids()
    assert {app: uids for app, uids in after.items() if app != "x264"} == before
    assert len(after["x264"]) == 1
    assert "x264" in proc.stdout  # the placement table

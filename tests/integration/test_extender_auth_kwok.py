"""The extender binds only for its scheduler: the role's HTTPS on kwok, and its RBAC on kwok's API server.

As site.yml does on kwok: the role's scheduler_config entry point makes the
certificates (its own CA, the extender's serving certificate, the scheduler's
client certificate) and the KubeSchedulerConfiguration (enableHTTPS, tlsConfig),
kwokctl's real kube-scheduler is created with it, and the role's main entry
point starts the extender as a local HTTPS process. Then:

- kube-scheduler binds a pod of interference-scheduler through the extender
  (mutual TLS works end to end);
- another client (no certificate, or a certificate that is not the
  scheduler's) POSTs /bind for a pending pod of another scheduler: refused,
  no Binding is sent, the pod stays unbound; even the scheduler's certificate
  cannot bind a pod that is not its scheduler's, or of another UID;
- the in-cluster RBAC (the role's in_cluster entry point, applied to this API
  server), checked with `kubectl auth can-i --as=system:serviceaccount:...`.
"""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import kwok, rbac
from tests.support.cluster_contract import cluster_vars
from tests.support.k8s_objects import make_node, make_pod
from tests.support.playbook_json import PlaybookRun, role_play, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

SCHEDULER = "interference-scheduler"
APPS_NAMESPACE = "interference-apps"


class Setup:
    def __init__(self, cluster: kwok.KwokCluster, workdir: Path, listen: str) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.listen = listen
        self.pki = workdir / "interference-extender" / "pki"
        self.api = cluster.api()
        self.variables: dict[str, Any] = {
            # As site.yml runs the role after cluster_provider: the provider and the cluster contract.
            **cluster_vars("kwok", kubeconfig=str(cluster.kubeconfig), context=f"kwok-{cluster.name}"),
            "cluster_name": cluster.name,
            "cluster_kwok_workdir": str(workdir),
            "cluster_kubeconfig": str(cluster.kubeconfig),
            "cluster_context": f"kwok-{cluster.name}",
            "scheduler_extender_local_listen": listen,
        }

    def run_role(self, tasks_from: str = "main", **extra: Any) -> PlaybookRun:
        return run_playbook(self.workdir, role_play("scheduler_extender", tasks_from), {**self.variables, **extra})

    def post(self, path: str, body: dict[str, Any], client: str | None) -> tuple[int, str]:
        """POST as a client holding `client`'s certificate of the role's PKI (None: no certificate)."""
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        if client is not None:
            context.load_cert_chain(str(self.pki / f"{client}.crt"), str(self.pki / f"{client}.key"))
        host, port = self.listen.rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), timeout=10, context=context)
        try:
            conn.request("POST", path, body=json.dumps(body).encode())
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, str]:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        host, port = self.listen.rsplit(":", 1)
        conn = http.client.HTTPSConnection(host, int(port), timeout=10, context=context)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def pending_pod(self, name: str, scheduler: str) -> Any:
        """A pod no running scheduler serves (or `scheduler`'s), left Pending; returns the stored object."""
        pod = make_pod(name, pod_type="cpu", scheduler_name=scheduler)
        kwok.create_pod(self.api, pod)
        return self.api.read_namespaced_pod(name, "default")

    def can_i(self, account: str, verb: str, resource: str, namespace: str) -> bool:
        return rbac.can_i([str(kwok.TOOLS / "kubectl"), "--kubeconfig", str(self.cluster.kubeconfig)],
                          account, verb, resource, namespace)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    workdir = tmp_path_factory.mktemp("extender-auth")
    listen = f"127.0.0.1:{kwok.free_port()}"
    config, _ = kwok.render_scheduler_config(
        workdir / "interference-extender", listen, {"scheduler_extender_tls": True}
    )
    cluster = kwok.KwokCluster(name=f"ext-auth-{kwok.free_port()}", workdir=workdir, scheduler_config=config)
    cluster.create()
    state = Setup(cluster, workdir, listen)
    try:
        kwok.create_nodes(state.api, [make_node("w1"), make_node("w2")])
        started = state.run_role()
        assert started.returncode == 0, json.dumps(started.report)[-4000:] + started.stderr
        yield state
    finally:
        pid_file = workdir / "interference-extender" / "extender.pid"
        if pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], check=False)
        cluster.delete()


def bind_body(pod: Any, node: str = "w1") -> dict[str, Any]:
    return {"PodName": pod.metadata.name, "PodNamespace": "default", "PodUID": pod.metadata.uid, "Node": node}


def test_the_scheduler_binds_through_the_extender_over_mutual_tls(setup: Setup) -> None:
    config = (setup.workdir / "clusters" / setup.cluster.name / "scheduler.yaml").read_text()
    assert f"https://{setup.listen}" in config and "enableHTTPS: true" in config
    pod = make_pod("through-the-extender", pod_type="cpu", scheduler_name=SCHEDULER)
    kwok.create_pod(setup.api, pod)
    assert kwok.wait_bound(setup.api, "through-the-extender") in ("w1", "w2")
    status, metrics = setup.get("/metrics")
    assert status == 200
    assert 'interference_extender_bindings_total{result="recorded"} 1.0' in metrics


@pytest.mark.parametrize("client", [None, "extender"])
def test_a_client_that_is_not_the_scheduler_cannot_bind(setup: Setup, client: str | None) -> None:
    """No certificate, or the extender's own (a certificate of the CA, but not the scheduler's)."""
    name = f"victim-{client or 'anonymous'}"
    pod = setup.pending_pod(name, SCHEDULER + "-not-running")
    try:
        status, body = setup.post("/bind", bind_body(pod), client)
    except (ssl.SSLError, ConnectionError):
        status, body = 0, "handshake refused"
    assert status in (0, 403), body
    if status == 403:
        assert "is for the scheduler only" in json.loads(body)["error"]
    assert kwok.bound_node(setup.api, name) is None
    events = setup.api.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    assert [e.reason for e in events if e.reason == "Scheduled"] == []


def test_even_the_schedulers_certificate_binds_only_its_own_pending_pods(setup: Setup) -> None:
    other = setup.pending_pod("another-schedulers-pod", "default-scheduler-elsewhere")
    status, body = setup.post("/bind", bind_body(other), "scheduler")
    assert status == 200
    assert "is scheduled by default-scheduler-elsewhere, not by this extender's scheduler" in json.loads(body)["Error"]
    assert kwok.bound_node(setup.api, "another-schedulers-pod") is None

    status, body = setup.post("/bind", {**bind_body(other), "PodUID": "0000-not-its-uid"}, "scheduler")
    assert "has UID" in json.loads(body)["Error"]
    assert kwok.bound_node(setup.api, "another-schedulers-pod") is None

    bound = setup.api.read_namespaced_pod("through-the-extender", "default")
    status, body = setup.post("/bind", bind_body(bound, node="w2" if bound.spec.node_name == "w1" else "w1"),
                              "scheduler")
    assert "is already bound to node" in json.loads(body)["Error"]


def test_the_in_cluster_rbac_is_narrowed(setup: Setup) -> None:
    applied = setup.run_role(
        "in_cluster",
        **cluster_vars("existing", kubeconfig=setup.variables["cluster_kubeconfig"],
                       context=setup.variables["cluster_context"]),
        scheduler_extender_image_build=False,
        scheduler_extender_kind_load=False,
        scheduler_extender_image_tag="rbac-test",
        scheduler_extender_kube_scheduler_image="registry.k8s.io/kube-scheduler:v1.34.0",
        apps_namespace=APPS_NAMESPACE,
    )
    assert applied.returncode == 0, json.dumps(applied.report)[-4000:] + applied.stderr
    extender, scheduler = "interference-extender", SCHEDULER
    # Bindings only in the apps namespace, for both.
    for account in (extender, scheduler):
        assert setup.can_i(account, "create", "pods/binding", APPS_NAMESPACE), account
        assert not setup.can_i(account, "create", "pods/binding", "default"), account
        assert not setup.can_i(account, "create", "pods/binding", "kube-system"), account
    # The extender reads, and writes nothing else.
    assert setup.can_i(extender, "list", "pods", "default")
    assert not setup.can_i(extender, "delete", "pods", APPS_NAMESPACE)
    assert not setup.can_i(extender, "update", "leases", "kube-system")
    # The second scheduler: its own Lease only, never the default scheduler's.
    assert setup.can_i(scheduler, "update", "leases/" + scheduler, "kube-system")
    assert not setup.can_i(scheduler, "update", "leases/kube-scheduler", "kube-system")
    assert not setup.can_i(scheduler, "get", "leases/kube-scheduler", "kube-system")
    assert setup.can_i(scheduler, "delete", "pods", "default")  # preemption, as kube-scheduler
    bindings = subprocess.run(
        [str(kwok.TOOLS / "kubectl"), "--kubeconfig", str(setup.cluster.kubeconfig), "get", "clusterrolebindings",
         "-o", "json"], capture_output=True, text=True, check=True,
    )
    to_kube_scheduler = [
        b["metadata"]["name"] for b in json.loads(bindings.stdout)["items"]
        if b["roleRef"]["name"] == "system:kube-scheduler"
        and any(s.get("name") == scheduler for s in b.get("subjects") or [])
    ]
    assert to_kube_scheduler == []

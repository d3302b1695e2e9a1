"""A kwok cluster whose real kube-scheduler calls the extender, for the tests and the benchmark.

Everything is real except the kubelets: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler are the binaries `make tools` builds
(tests.support.tools.tools_bin()), kwok-controller plays the nodes. The KubeSchedulerConfiguration
is the one the `scheduler_extender` role renders (its `scheduler_config` entry
point, run through ansible-playbook), given to kwokctl's scheduler with
`--kube-scheduler-config`, as site.yml does on kwok.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.playbook_json import run_role_entry_point
from tests.support.tools import tools_bin

REPO = Path(__file__).resolve().parents[2]
TOOLS = tools_bin()
# The kwok_cluster role's kwok_cluster_create_lock default: creations take turns (KwokCluster.create).
CREATE_LOCK = "/tmp/interference-orchestrator-kwokctl-create.lock"
# The role's arguments for every component (no leader election), read from its vars: one home.
COMPONENT_ARGS: tuple[str, ...] = tuple(
    yaml.safe_load((REPO / "roles" / "kwok_cluster" / "vars" / "main.yml").read_text())["kwok_cluster_component_args"]
)
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwokctl", "kubectl")


def missing_tools() -> list[str]:
    """Names of the binaries `make tools` builds that are not there yet."""
    return [name for name in COMPONENTS if not (TOOLS / name).is_file()]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Callable[[], Any], timeout: float = 120.0, interval: float = 0.2) -> Any:
    """Poll `check` until it returns something truthy; fail with `what` after `timeout` seconds (liveness only)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)


def render_scheduler_config(
    directory: Path, listen: str, extra_vars: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """Run the role's scheduler_config entry point; returns (KubeSchedulerConfiguration, policy) paths."""
    directory.mkdir(parents=True, exist_ok=True)
    # Plain HTTP unless asked: these harnesses start their own extender without certificates
    # (tests/integration/test_extender_auth_kwok.py runs the role's HTTPS).
    variables: dict[str, Any] = {
        "scheduler_extender_local_dir": str(directory),
        "scheduler_extender_local_listen": listen,
        "scheduler_extender_tls": False,
    }
    variables.update(extra_vars or {})
    run_role_entry_point(directory, "scheduler_extender", "scheduler_config", variables)
    return directory / "kube-scheduler-config.yaml", directory / "policy.yml"


@dataclass
class KwokCluster:
    """One kwokctl cluster in its own work folder (binary runtime, local binaries)."""

    name: str
    workdir: Path
    scheduler_config: Path | None = None
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    # More `kwokctl create cluster` flags, e.g. ("--disable-qps-limits", "--disable", "kube-scheduler").
    create_args: tuple[str, ...] = ()

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{TOOLS}:{os.environ.get('PATH', '')}",
            "KWOK_WORKDIR": str(self.workdir),
            "KWOK_KUBECTL_BINARY": str(TOOLS / "kubectl"),
        }

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "clusters" / self.name / "kubeconfig.yaml"

    def create(self) -> None:
        argv = [
            str(TOOLS / "kwokctl"), "create", "cluster", "--name", self.name, "--runtime", "binary",
            "--kubeconfig", "", "--wait", "120s",
            "--etcd-binary", str(TOOLS / "etcd"),
            "--kube-apiserver-binary", str(TOOLS / "kube-apiserver"),
            "--kube-controller-manager-binary", str(TOOLS / "kube-controller-manager"),
            "--kube-scheduler-binary", str(TOOLS / "kube-scheduler"),
            "--kwok-controller-binary", str(TOOLS / "kwok"),
        ]
        if self.scheduler_config is not None:
            argv += ["--kube-scheduler-config", str(self.scheduler_config)]
        argv += COMPONENT_ARGS
        # One creation at a time on the machine, under the kwok_cluster role's lock
        # (its default): every kwokctl picks its ports counting down from 32767,
        # taking the first nothing listens on yet, so two creations at once (xdist
        # workers, or two checkouts) pick the same ports and share one etcd.
        with open(CREATE_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subprocess.run([*argv, *self.create_args], check=True, env=self.env, capture_output=True)
        # kwokctl's --wait covers the components, not the controller-manager's
        # first sync: a pod created before the `default` ServiceAccount exists
        # is refused by the ServiceAccount admission plugin.
        core = self.api()
        try:
            wait_for(
                "the default ServiceAccount",
                lambda: any(
                    sa.metadata.name == "default" for sa in core.list_namespaced_service_account("default").items
                ),
                timeout=300.0,
            )
        except TimeoutError as error:
            raise TimeoutError(f"{error}; {self.component_report('kube-controller-manager')}") from None

    def running_pid(self, component: str) -> int | None:
        """The pid of a kwokctl component (kube-apiserver, ...) while it runs (not a zombie), else None."""
        try:
            pid = int((self.workdir / "clusters" / self.name / "pids" / f"{component}.pid").read_text())
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, ValueError):
            return None
        return None if "State:\tZ" in status else pid

    def component_report(self, component: str, lines: int = 15) -> str:
        """Whether a kwokctl component still runs, and its log's last lines (for a failure message)."""
        pid = self.running_pid(component)
        state = f"{component} (pid {pid}) runs" if pid else f"{component} is not running"
        try:
            log = self.workdir / "clusters" / self.name / "logs" / f"{component}.log"
            tail = log.read_text(errors="replace").splitlines()[-lines:]
        except OSError as error:
            tail = [f"(no log: {error})"]
        return state + "; its last log lines:\n" + "\n".join(tail)

    def delete(self) -> None:
        for process in self.processes:
            stop(process)
        # kwokctl refuses an empty --kubeconfig here; a file that does not exist leaves every kubeconfig alone.
        subprocess.run(
            [str(TOOLS / "kwokctl"), "delete", "cluster", "--name", self.name,
             "--kubeconfig", str(self.workdir / "no-user-kubeconfig.yaml")],
            check=True, env=self.env, capture_output=True,
        )

    def api(self) -> Any:
        from kubernetes import client, config

        return client.CoreV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))

    def apps_api(self) -> Any:
        """AppsV1Api (Deployments) of the cluster."""
        from kubernetes import client, config

        return client.AppsV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))

    def start_scheduler(self, config: Path, log: Path) -> subprocess.Popen[bytes]:
        """An extra kube-scheduler process (the same binary) with its own configuration."""
        with log.open("ab") as out:
            process = subprocess.Popen(
                [str(TOOLS / "kube-scheduler"), f"--config={config}", f"--secure-port={free_port()}",
                 "--bind-address=127.0.0.1"],
                stdout=out, stderr=subprocess.STDOUT, env=self.env,
            )
        self.processes.append(process)
        return process


def stop(process: subprocess.Popen[Any]) -> None:
    """Terminate a child process and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_extender(
    kubeconfig: Path, listen: str, policy: Path, log: Path, extra_args: Iterable[str] = ()
) -> subprocess.Popen[bytes]:
    """Start scripts/extender against the cluster and wait until it has listed pods and nodes."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(REPO / "scripts" / "extender"), "--listen", listen, "--kubeconfig", str(kubeconfig),
             "--config", str(policy), *extra_args],
            stdout=out, stderr=subprocess.STDOUT,
        )
    wait_for("the extender to be ready", lambda: process.poll() is not None or http_status(listen, "/readyz") == 200)
    if process.poll() is not None:
        raise RuntimeError(f"the extender exited: {log.read_text()}")
    return process


@contextmanager
def extender_cluster(workdir: Path, name: str, nodes: Iterable[Any]) -> Iterator[tuple[KwokCluster, Any, str]]:
    """A kwok cluster whose kube-scheduler calls the role's extender entry at a free address, with `nodes`.

    Yields (cluster, CoreV1Api, the extender's listen address); the extender itself is started by the test
    (start_extender), with the policy it needs. The cluster is deleted at the end.
    """
    listen = f"127.0.0.1:{free_port()}"
    config, _ = render_scheduler_config(workdir / "plain", listen)
    cluster = KwokCluster(name=f"{name}-{free_port()}", workdir=workdir, scheduler_config=config)
    cluster.create()
    try:
        api = cluster.api()
        create_nodes(api, nodes)
        yield cluster, api, listen
    finally:
        cluster.delete()


def http_status(listen: str, path: str) -> int | None:
    host, port = listen.rsplit(":", 1)
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return None


def metric(listen: str, name: str) -> float | None:
    """One sample of the extender's /metrics (exact series name with labels), or None."""
    host, port = listen.rsplit(":", 1)
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def kwok_node(node: Any) -> dict[str, Any]:
    """A Node object for kwok-controller to play (the annotation hands it over)."""
    from tests.support.k8s_objects import serialise

    body: dict[str, Any] = serialise(node)
    body["metadata"].setdefault("annotations", {})["kwok.x-k8s.io/node"] = "fake"
    for server_set in ("uid", "resourceVersion"):
        body["metadata"].pop(server_set, None)
    body["status"] = {"capacity": body["status"]["capacity"], "allocatable": body["status"]["allocatable"]}
    body["spec"] = {}
    return body


def create_nodes(api: Any, nodes: Iterable[Any]) -> list[str]:
    names = []
    for node in nodes:
        body = kwok_node(node)
        api.create_node(body)
        names.append(body["metadata"]["name"])
    try:
        wait_for("the nodes to be Ready", lambda: all(_ready(api.read_node(name)) for name in names))
    except TimeoutError as error:
        # What kwok-controller did with them: no condition at all means it never played them.
        states = {name: [(c.type, c.status) for c in (api.read_node(name).status.conditions or [])] for name in names}
        raise TimeoutError(f"{error}; their conditions: {states}") from error
    return names


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def create_pod(api: Any, pod: Any) -> None:
    from tests.support.k8s_objects import serialise

    body = serialise(pod)
    body.pop("status", None)
    api.create_namespaced_pod(body["metadata"].get("namespace", "default"), body)


def bound_node(api: Any, name: str, namespace: str = "default") -> str | None:
    return api.read_namespaced_pod(name, namespace).spec.node_name


def wait_bound(api: Any, name: str, namespace: str = "default", timeout: float = 60.0) -> str:
    return str(wait_for(f"pod {name} to be bound", lambda: bound_node(api, name, namespace), timeout=timeout))


def write_scheduler_config(
    path: Path, kubeconfig: Path, profile: str, extender_url: str | None, extender_binds: bool = True
) -> Path:
    """A KubeSchedulerConfiguration for an extra scheduler process (benchmark: with and without the extender).

    The extender entry is the role's (kube-scheduler-config.yaml next to `path`);
    `extender_binds=False` drops its bindVerb, so kube-scheduler binds itself.
    """
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": profile}],
    }
    if extender_url:
        role_config = yaml.safe_load((path.parent / "kube-scheduler-config.yaml").read_text())
        extender = dict(role_config["extenders"][0], urlPrefix=extender_url)
        if not extender_binds:
            extender.pop("bindVerb", None)
        config["extenders"] = [extender]
    path.write_text(json.dumps(config))
    return path


def delete_pod(api: Any, name: str, namespace: str = "default") -> None:
    """Delete a pod at once and wait until the API server no longer has it."""
    from kubernetes.client.exceptions import ApiException

    api.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    def gone() -> bool:
        try:
            api.read_namespaced_pod(name, namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(f"pod {name} to be deleted", gone)


class BindingWatch(threading.Thread):
    """When each pod of a namespace is first seen bound (monotonic seconds) and where (the benchmarks).

    A watch from `resource_version` (taken before the scheduler starts, so no
    binding is missed), one event per binding for every scheduler alike:
    listing 5,000 pods every 50 ms loaded the API server more than the
    schedulers did, and measured a burst of 300 pods in 50 ms steps. Runs
    until `count` pods are bound or `timeout` seconds.
    """

    def __init__(self, api: Any, namespace: str, resource_version: str, count: int, timeout: float) -> None:
        super().__init__(name=f"watch-{namespace}", daemon=True)
        self.api, self.namespace, self.version, self.count = api, namespace, resource_version, count
        self.deadline = time.monotonic() + timeout
        self.seen: dict[str, tuple[float, str]] = {}

    def run(self) -> None:
        from kubernetes import watch

        while len(self.seen) < self.count and time.monotonic() < self.deadline:
            try:
                stream = watch.Watch().stream(
                    self.api.list_namespaced_pod, self.namespace, field_selector="spec.nodeName!=",
                    resource_version=self.version, timeout_seconds=30, allow_watch_bookmarks=True, deserialize=False,
                )
                for event in stream:
                    now = time.monotonic()
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise RuntimeError(obj.get("message") or obj)  # noqa: TRY301 - handled below: list again
                    self.version = obj["metadata"].get("resourceVersion") or self.version
                    name, node = obj["metadata"].get("name"), (obj.get("spec") or {}).get("nodeName")
                    if event.get("type") in ("ADDED", "MODIFIED") and node and name not in self.seen:
                        self.seen[name] = (now, node)
                    if len(self.seen) >= self.count:
                        return
            except Exception as exc:
                # An expired watch (410) or a broken stream: list what is bound now (their times are
                # this moment, a rare and small error) and watch on from that list.
                print(f"watch of {self.namespace} restarted: {exc}", file=sys.stderr, flush=True)
                listed = json.loads(self.api.list_namespaced_pod(
                    self.namespace, field_selector="spec.nodeName!=", _preload_content=False).data)
                now = time.monotonic()
                for pod in listed["items"]:
                    self.seen.setdefault(pod["metadata"]["name"], (now, pod["spec"]["nodeName"]))
                self.version = listed["metadata"]["resourceVersion"]

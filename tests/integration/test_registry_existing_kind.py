"""site.yml against an existing cluster that pulls its images from a registry: the real thing, end to end.

The existing cluster is a kind cluster (offline node image) this test creates
with the kind CLI; the registry is CNCF distribution (`registry`, built from
its Go module by scripts/build-tools.sh), run from the tools folder. Neither is
product code: they stand in for EKS and ECR.

kind nodes are containers, so 127.0.0.1 inside a node is the node itself.
This follows kind's "local registry" recipe with the registry as a host
process: one storage folder served twice, read-write on 127.0.0.1 (the name
images are pushed to; the Docker engine speaks plain HTTP to loopback
registries by default; basic auth, so `docker login` is exercised) and
read-only on the kind network's gateway, which containerd on every node
reaches through a hosts.toml mirror for the 127.0.0.1 name (the
containerdConfigPatches below turn on /etc/containerd/certs.d). That setup is
this test's fixture, not a product default.

site.yml runs with `cluster_provider: existing`, `images_registry` and
`monitoring_mode: off`. Proof that the pods' images came from the registry:
every Deployment names its image by the digest the registry serves for the
pushed tag (`<registry>/<name>@sha256:...`), the pods' imageID is that digest,
the registry's access log shows the nodes' containerd fetching the manifests by
that digest, and /v2/_catalog and the tags lists hold what was pushed. A rerun
and a check run change nothing. Needs a Docker engine and `make tools`
(kind, kubectl, registry); skipped with the reason otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kind, kwok
from tests.support.docker import docker_answers, image_layers
from tests.support.playbook_json import REPO, PlaybookRun, run_playbook, run_playbook_file
from tests.support.tools import tools_bin

TOOLS = tools_bin()
CLUSTER = kind.SHARED_NAME
NAMESPACE = "interference-apps"
REPOSITORY = "interference"
USER = "pusher"
PASSWORD = "registry-test-password"  # a throwaway credential of this test's own registry
APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
]
# The four workloads pts_images builds offline, as pushed (pts_images_debian_workloads).
WORKLOADS = ["povray", "7zip", "mbw", "stressapptest"]
PUSH_TASK = "Push each image to {registry}"


def missing_tools() -> list[str]:
    return [name for name in ("kind", "kubectl", "registry") if not (TOOLS / name).is_file()]


pytestmark = [
    pytest.mark.cluster,
    pytest.mark.kind,
    pytest.mark.skipif(not docker_answers(), reason="no Docker engine answers (`docker info`): kind cannot run"),
    pytest.mark.skipif(bool(missing_tools()), reason=f"run `make tools` first: {missing_tools()} not in {TOOLS}"),
]


def bcrypt_hash(password: str) -> str:
    """An htpasswd bcrypt hash (distribution accepts only bcrypt), from libxcrypt through the crypt module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # removed in Python 3.13; the project pins 3.11

    return str(crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH)))


def free_port_on(*hosts: str) -> int:
    """A TCP port free on every host address given (the registry serves the same port on each)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((hosts[0], 0))
            port = int(probe.getsockname()[1])
        try:
            for host in hosts[1:]:
                with socket.socket() as other:
                    other.bind((host, port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no port free on all of {hosts}")


@dataclass
class Registry:
    """One storage folder served by two `registry` processes: read-write with basic auth, and read-only."""

    root: Path
    push_address: str
    pull_address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> None:
        (self.root / "htpasswd").write_text(f"{USER}:{bcrypt_hash(PASSWORD)}\n")
        for role, address in (("push", self.push_address), ("pull", self.pull_address)):
            config: dict[str, Any] = {
                "version": 0.1,
                "log": {"level": "info", "formatter": "text"},
                "storage": {
                    "filesystem": {"rootdirectory": str(self.root / "storage")},
                    "maintenance": {"readonly": {"enabled": role == "pull"}},
                },
                "http": {"addr": address, "secret": f"registry-test-{role}"},
            }
            if role == "push":
                config["auth"] = {"htpasswd": {"realm": "registry-test", "path": str(self.root / "htpasswd")}}
            (self.root / f"{role}.yml").write_text(yaml.safe_dump(config))
            with (self.root / f"{role}.log").open("ab") as log:
                self.processes.append(subprocess.Popen(
                    [str(TOOLS / "registry"), "serve", str(self.root / f"{role}.yml")],
                    stdout=log, stderr=subprocess.STDOUT,
                    # No OpenTelemetry collector here: without this it retries localhost:4318 every 5 s.
                    env={**os.environ, "OTEL_TRACES_EXPORTER": "none"},
                ))
        for address in (self.push_address, self.pull_address):
            kwok.wait_for(f"the registry on {address}", partial(registry_answers, address))

    def stop(self) -> None:
        for process in self.processes:
            kwok.stop(process)

    def get(self, path: str, accept: str | None = None) -> tuple[dict[str, str], Any]:
        """GET on the read-only side (no credentials): headers and the JSON body."""
        request = urllib.request.Request(f"http://{self.pull_address}{path}", headers={"Accept": accept or "*/*"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return dict(response.headers), json.loads(response.read())

    def pull_log(self) -> str:
        return (self.root / "pull.log").read_text()

    def push_log(self) -> str:
        return (self.root / "push.log").read_text()


def registry_answers(address: str) -> bool:
    """The API root answers: 200, or 401 on the side with basic auth."""
    return http_status(f"http://{address}/v2/") in (200, 401)


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return None


def run(*argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}"
    return done.stdout


@dataclass
class ExistingKind:
    tmp: Path
    env: dict[str, str]
    kubeconfig: Path
    registry: Registry

    @property
    def images_registry(self) -> str:
        return f"{self.registry.push_address}/{REPOSITORY}"

    def site(self, *, check: bool = False) -> PlaybookRun:
        variables = {
            "cluster_provider": "existing",
            "cluster_kubeconfig": str(self.kubeconfig),
            "cluster_context": f"kind-{CLUSTER}",
            "images_registry": self.images_registry,
            "images_registry_username": USER,
            "images_registry_password": PASSWORD,
            "monitoring_mode": "off",
            # The Debian workloads: no image registry answers here, and the test must not depend on one.
            "image_source": "offline",
            "apps": APPS,
        }
        return run_playbook_file(self.tmp, REPO / "site.yml", variables, check=check, env=self.env)

    def pods(self) -> dict[str, dict[str, Any]]:
        out = run("kubectl", "--kubeconfig", str(self.kubeconfig), "-n", NAMESPACE, "get", "pods", "-o", "json",
                  env=self.env)
        return {p["metadata"]["labels"]["app.kubernetes.io/name"]: p for p in json.loads(out)["items"]}


def mirror_on_nodes(nodes: list[str], name: str, pull_address: str) -> None:
    """Tell each node's containerd to fetch `name` (what images are pushed as) from the read-only registry."""
    hosts_toml = (
        f'server = "http://{pull_address}"\n\n[host."http://{pull_address}"]\n  capabilities = ["pull", "resolve"]\n'
    )
    for node in nodes:
        run("docker", "exec", node, "mkdir", "-p", f"/etc/containerd/certs.d/{name}")
        subprocess.run(["docker", "exec", "-i", node, "cp", "/dev/stdin", f"/etc/containerd/certs.d/{name}/hosts.toml"],
                       input=hosts_toml, text=True, check=True, capture_output=True)


@pytest.fixture(scope="module")
def existing(tmp_path_factory: pytest.TempPathFactory, shared_kind: kind.KindCluster) -> Iterator[ExistingKind]:
    # The kind tier's shared cluster (tests/integration/conftest.py): its config turns on
    # containerd's per-registry hosts.toml, which the mirror below needs.
    tmp = tmp_path_factory.mktemp("registry")
    (tmp / "docker").mkdir()
    env = {
        **shared_kind.env,
        # docker login writes here, not into the user's ~/.docker/config.json.
        "DOCKER_CONFIG": str(tmp / "docker"),
    }
    registry: Registry | None = None
    try:
        nodes = shared_kind.nodes()
        # The host as the nodes see it: their default gateway on the kind network.
        gateway = run("docker", "exec", nodes[0], "ip", "-4", "route", "show", "default").split()[2]
        port = free_port_on("127.0.0.1", gateway)
        registry = Registry(tmp / "registry", f"127.0.0.1:{port}", f"{gateway}:{port}")
        registry.root.mkdir()
        registry.start()
        mirror_on_nodes(nodes, registry.push_address, registry.pull_address)
        yield ExistingKind(tmp, env, shared_kind.kubeconfig, registry)
    finally:
        # The apps go with their namespace; the cluster is the session's (deleted at its end).
        subprocess.run(["kubectl", "--kubeconfig", str(shared_kind.kubeconfig), "delete", "namespace", NAMESPACE,
                        "--ignore-not-found", "--wait=false"], env=env, capture_output=True, check=False)
        if registry is not None:
            registry.stop()
            # Only the tags this test added (the images keep their other names).
            tags = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}",
                                   "--filter", f"reference={registry.push_address}/*/*"],
                                  capture_output=True, text=True, check=False).stdout.split()
            if tags:
                subprocess.run(["docker", "image", "rm", *tags], capture_output=True, check=False)


@pytest.fixture(scope="module")
def first_run(existing: ExistingKind) -> PlaybookRun:
    return existing.site()


def push_results(run: PlaybookRun, existing: ExistingKind) -> list[dict[str, Any]]:
    (result,) = run.results(PUSH_TASK.format(registry=existing.images_registry))
    return list(result["results"])


def test_site_pushes_the_workload_images_and_the_pods_pull_them_from_the_registry(
    existing: ExistingKind, first_run: PlaybookRun
) -> None:
    assert first_run.returncode == 0, json.dumps(first_run.report)[-6000:] + first_run.stderr
    results = push_results(first_run, existing)
    pushed = {item["item"]["repository"] for item in results}
    assert {ref.rsplit(":", 1)[0] for ref in pushed} == {f"{existing.images_registry}/{w}" for w in WORKLOADS}
    assert all(any(a.startswith("Pushed image ") for a in item.get("actions", [])) for item in results), results
    # Docker sends only the layers the registry lacks, and the module reports a change only when it sent
    # one. The four images share a base and differ in one small layer, which two images built within one
    # second have byte for byte (the classic builder stamps directory times in seconds): the second of
    # them sends nothing. So: every push that sent nothing sent only layers pushed before it.
    sent: set[str] = set()
    for item in results:
        layers = set(image_layers(item["item"]["name"]))
        assert item["changed"] or layers <= sent, (item["item"]["repository"], sorted(layers - sent), results)
        sent |= layers
    assert any(item["changed"] for item in results)
    assert any(f"pushed to {existing.images_registry} (images_registry)" in m for m in first_run.messages())
    assert "monitoring: skipped: monitoring_mode is off." in first_run.messages()
    assert not first_run.results("Load each image into the nodes that lack it")  # no `kind load`

    # The nodes' containerd fetched the manifests from the read-only registry (read before this test asks it).
    pull_log = existing.registry.pull_log()
    pods = existing.pods()
    accept = ("application/vnd.docker.distribution.manifest.v2+json,application/vnd.oci.image.manifest.v1+json,"
              "application/vnd.oci.image.index.v1+json")
    served: dict[str, str] = {}  # pushed <registry>/<name>:<tag> -> <registry>/<name>@<the digest the registry serves>
    for reference in pushed:
        name, tag = reference.rsplit(":", 1)
        headers, _ = existing.registry.get(f"/v2/{name.split('/', 1)[1]}/manifests/{tag}", accept=accept)
        served[reference] = f"{name}@{headers['Docker-Content-Digest']}"
    # Every Deployment site.yml made names its image by the digest the registry serves for the pushed tag.
    deployments = json.loads(run("kubectl", "--kubeconfig", str(existing.kubeconfig), "-n", NAMESPACE, "get",
                                 "deployments", "-o", "json", env=existing.env))["items"]
    assert {d["metadata"]["name"] for d in deployments} == {app["name"] for app in APPS}
    for deployment in deployments:
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert container["image"] in served.values(), (deployment["metadata"]["name"], container["image"], served)
    for app, workload in (("c-ray", "povray"), ("mbw", "mbw")):
        pod = pods[app]
        (container,) = pod["spec"]["containers"]
        (status,) = pod["status"]["containerStatuses"]
        name, digest = container["image"].split("@")
        assert name == f"{existing.images_registry}/{workload}"
        assert status["state"].get("running"), status
        # Pulled by digest, from the read-only registry, and running exactly those bytes.
        manifest_path = f"/v2/{REPOSITORY}/{workload}/manifests/{digest}"
        assert any(manifest_path in line and "containerd" in line for line in pull_log.splitlines()), manifest_path
        assert status["imageID"] == container["image"]

    _, catalog = existing.registry.get("/v2/_catalog")
    assert set(catalog["repositories"]) == {f"{REPOSITORY}/{w}" for w in WORKLOADS}
    for reference in pushed:
        name, tag = reference.rsplit(":", 1)
        _, tags = existing.registry.get(f"/v2/{name.split('/', 1)[1]}/tags/list")
        assert tags["tags"] == [tag]


def test_a_rerun_pushes_nothing_and_changes_nothing(existing: ExistingKind, first_run: PlaybookRun) -> None:
    before = {app: pod["metadata"]["uid"] for app, pod in existing.pods().items()}
    again = existing.site()
    assert again.returncode == 0, json.dumps(again.report)[-6000:] + again.stderr
    assert [item["changed"] for item in push_results(again, existing)] == [False] * len(WORKLOADS)
    assert again.stats["changed"] == 0, again.stats
    assert {app: pod["metadata"]["uid"] for app, pod in existing.pods().items()} == before


def test_check_mode_changes_nothing_either(existing: ExistingKind, first_run: PlaybookRun) -> None:
    check = existing.site(check=True)
    assert check.returncode == 0, json.dumps(check.report)[-6000:] + check.stderr
    assert check.stats["changed"] == 0, check.stats


def push_one(existing: ExistingKind, name: str, repository: str, docker_config: Path, **extra: Any) -> PlaybookRun:
    """The image_registry role alone, with its own Docker client configuration (no stored login)."""
    return run_playbook(
        existing.tmp,
        [{"hosts": "localhost", "gather_facts": False,
          "tasks": [{"ansible.builtin.include_role": {"name": "interference.orchestrator.image_registry"}}]}],
        {"image_registry_images": [{"name": name, "repository": repository}],
         "image_registry_address": repository.rsplit("/", 1)[0], "image_registry_push_delay": 1, **extra},
        env={**existing.env, "DOCKER_CONFIG": str(docker_config)},
    )


def test_a_refused_push_is_retried_then_names_the_image_and_the_registry(
    existing: ExistingKind, first_run: PlaybookRun, tmp_path: Path
) -> None:
    (mbw,) = [item["item"]["name"] for item in push_results(first_run, existing) if "/mbw:" in item["item"]["name"]]
    registry = f"{existing.registry.push_address}/refused"
    target = f"{registry}/mbw:{mbw.rsplit(':', 1)[1]}"

    def refusals(retries: int) -> tuple[PlaybookRun, int]:
        """Push without credentials; the run and how many requests the registry refused meanwhile."""
        before = existing.registry.push_log().count(" 401 ")
        result = push_one(existing, mbw, target, tmp_path, image_registry_push_retries=retries)
        return result, existing.registry.push_log().count(" 401 ") - before

    once, refused_once = refusals(0)
    thrice, refused_thrice = refusals(2)
    assert once.returncode != 0 and thrice.returncode != 0
    # Each attempt is refused alike: three attempts, three times the refusals of one.
    assert refused_once > 0 and refused_thrice == 3 * refused_once
    (failed,) = thrice.results("Name the images and the registry that failed")
    expected = f"image_registry: pushing to {registry} failed after 3 attempts: {mbw} as {target}: "
    assert failed["msg"].startswith(expected), failed["msg"]
    assert "no basic auth credentials" in failed["msg"]


def test_a_wrong_password_names_the_registry_and_user_without_the_secret(
    existing: ExistingKind, first_run: PlaybookRun, tmp_path: Path
) -> None:
    wrong = base64.b64encode(b"not-the-password").decode()
    result = push_one(existing, "unused:tag", f"{existing.registry.push_address}/x/unused:tag", tmp_path,
                      image_registry_username=USER, image_registry_password=wrong)
    assert result.returncode != 0
    (failed,) = result.results("Say which login failed")
    expected = f"image_registry: docker login to {existing.registry.push_address} as {USER} failed"
    assert failed["msg"].startswith(expected), failed["msg"]
    assert wrong not in json.dumps(result.report) + result.stderr

"""kind clusters for the kind tier, made with the kind CLI from the offline node image.

The kind modules that only need *a* kind cluster (the in-cluster schedulers,
the registry as an existing cluster) share one, `SHARED_NAME`, made once per
test session (the `shared_kind` fixture in tests/integration/conftest.py),
each working in namespaces of its own. Making a cluster and loading the
images into its nodes is the slowest step of those modules, so it is paid
once. The node image comes from `make images` (cached by content: asking for
it again builds nothing); KIND_NODE_IMAGE names another one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.playbook_json import REPO
from tests.support.tools import tools_bin

TOOLS = tools_bin()
# The kind_cluster role's offline node-image recipe (it ships with the role).
NODE_IMAGE_BUILD = REPO / "roles" / "kind_cluster" / "files" / "kind-node-image" / "build.sh"
VENV_BIN = REPO / ".venv" / "bin"
# One name per checkout, so two checkouts testing at once (worktrees) never share, or delete, each other's.
SHARED_NAME = "it-" + hashlib.sha256(str(REPO).encode()).hexdigest()[:6]
# Two workers: the schedulers' module places one probe pod per scheduler, and
# site.yml's `cluster_workers=2` there must match what it finds to reuse the cluster.
SHARED_WORKERS = 2


def node_image() -> str:
    """The offline node image `make images` built (KIND_NODE_IMAGE wins); built here only if it is missing."""
    if os.environ.get("KIND_NODE_IMAGE"):
        return os.environ["KIND_NODE_IMAGE"]
    built = subprocess.run([str(NODE_IMAGE_BUILD)], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr[-4000:]
    return built.stdout.strip()


def config(image: str, workers: int) -> dict[str, Any]:
    """A kind config: one control plane and `workers` workers, with containerd's per-registry hosts.toml on.

    kind's local-registry recipe: containerd reads /etc/containerd/certs.d, so
    a test can point a registry name at a mirror after the cluster is made.
    """
    return {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "containerdConfigPatches": [
            '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"'
        ],
        "nodes": [{"role": "control-plane", "image": image}] + [{"role": "worker", "image": image}] * workers,
    }


@dataclass
class KindCluster:
    """A kind cluster and the kubeconfig file that reaches it (context `kind-<name>`)."""

    name: str
    kubeconfig: Path
    env: dict[str, str]

    @property
    def context(self) -> str:
        return f"kind-{self.name}"

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=self.env)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}"
        return done.stdout

    def nodes(self) -> list[str]:
        return self.run("kind", "get", "nodes", "--name", self.name).split()

    def delete(self) -> None:
        subprocess.run(["kind", "delete", "cluster", "--name", self.name, "--kubeconfig", str(self.kubeconfig)],
                       env=self.env, capture_output=True, check=False)


def create(name: str, workdir: Path, workers: int) -> KindCluster:
    """Make the kind cluster `name` (deleting a leftover of an interrupted run first); its files go in `workdir`."""
    env = {
        **os.environ,
        "PATH": f"{TOOLS}:{VENV_BIN}:{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(workdir / "kubeconfig"),
    }
    cluster = KindCluster(name, workdir / "kubeconfig", env)
    cluster.delete()
    (workdir / "kind.yaml").write_text(yaml.safe_dump(config(node_image(), workers)))
    cluster.run("kind", "create", "cluster", "--name", name, "--config", str(workdir / "kind.yaml"),
                "--kubeconfig", str(cluster.kubeconfig), "--wait", "180s")
    return cluster

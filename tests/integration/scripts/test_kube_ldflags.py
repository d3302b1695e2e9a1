"""kube-ldflags.sh: the version stamp of every Kubernetes binary the scripts build (no Go, no build).

components.sh (the node image) and scripts/build-tools.sh (the tools folder)
both source it. The flags are part of components.sh's build stamp, so a change
to them rebuilds every cached node binary: they are pinned here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
NODE_IMAGE = REPO / "roles" / "kind_cluster" / "files" / "kind-node-image"
LIBRARY = NODE_IMAGE / "kube-ldflags.sh"


def test_the_flags_stamp_the_version_into_both_version_packages() -> None:
    out = subprocess.run(
        ["bash", "-c", 'source "$1" && kube_ldflags v1.34.4', "bash", str(LIBRARY)],
        capture_output=True, text=True, check=True,
    ).stdout
    expected = "".join(
        f" -X {pkg}.gitVersion=v1.34.4 -X {pkg}.gitMajor=1 -X {pkg}.gitMinor=34"
        f" -X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    )
    assert out == expected + "\n"


def test_both_scripts_source_the_one_library() -> None:
    for script in (NODE_IMAGE / "components.sh", REPO / "scripts" / "build-tools.sh"):
        text = script.read_text()
        assert "kube-ldflags.sh\"" in text, script
        assert "kube_ldflags() {" not in text, f"{script} defines kube_ldflags again"
    # components.sh loads it from beside itself (as in the installed collection) before anything runs.
    listed = subprocess.run([str(NODE_IMAGE / "components.sh"), "list"], capture_output=True, text=True, check=True)
    assert "kubelet" in listed.stdout.split()

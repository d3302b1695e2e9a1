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


def test_one_kubernetes_build_at_a_time_the_second_waits_and_says_so(tmp_path: Path) -> None:
    """kube_lock: make tools and the node image's components must not compile the Kubernetes tree at once.

    A holder keeps the lock until it is told to let go; a second kube_lock
    blocks until then, says in one line that it waits, and after kube_unlock
    the lock is free again (flock -n takes it).
    """
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    lock = tmp_path / ".cache" / "interference-orchestrator" / "kubernetes-build.lock"
    release = tmp_path / "release"
    holder = subprocess.Popen(
        ["bash", "-c", 'source "$1"; kube_lock build-tools kube-apiserver; echo held; '
         'while [[ ! -e $2 ]]; do sleep 0.05; done; kube_unlock; sleep 30', "bash", str(LIBRARY), str(release)],
        env=env, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiter = subprocess.Popen(
            ["bash", "-c", 'source "$1"; kube_lock node-components kube-apiserver; echo got; kube_unlock; '
             'flock -n "$2" true && echo free', "bash", str(LIBRARY), str(lock)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            waiter.wait(timeout=1.5)
            raise AssertionError("kube_lock did not wait for the holder: " + waiter.stdout.read())  # type: ignore[union-attr]
        except subprocess.TimeoutExpired:
            pass
        release.touch()  # the holder unlocks, but stays alive: the lock is the fd, not the process
        out, err = waiter.communicate(timeout=30)
        assert out == "got\nfree\n"
        assert err == (
            "[node-components] kube-apiserver: waiting for the other build of a Kubernetes binary"
            " (make tools and the node image build the same ones; the second reuses the first)\n"
        )
    finally:
        holder.kill()
        holder.wait()


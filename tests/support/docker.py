"""The local Docker engine, for the tests that need one: whether it answers, and small images made here."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path


def docker_answers() -> bool:
    """Whether a Docker engine answers `docker info` (kind needs one)."""
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30).returncode == 0


def image_layers(reference: str) -> list[str]:
    """The layer digests (RootFS.Layers) of local image `reference`, as the engine reports them."""
    proc = subprocess.run(["docker", "image", "inspect", reference, "--format", "{{json .RootFS.Layers}}"],
                          capture_output=True, text=True, check=True)
    return list(json.loads(proc.stdout))


def import_image(name: str, content: str, work: Path) -> None:
    """Make (or move) image `name`: one layer holding the file /release with `content` (other content, other ID)."""
    work.mkdir(parents=True, exist_ok=True)
    release = work / "release"
    release.write_text(content)
    archive = work / "layer.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(release, arcname="release")
    subprocess.run(["docker", "import", str(archive), name], capture_output=True, check=True)


def remove_image(name: str) -> None:
    """Remove image `name` if it is there."""
    subprocess.run(["docker", "image", "rm", "-f", name], capture_output=True, check=False)

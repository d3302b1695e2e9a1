"""scripts/docker-engine.sh and scripts/test-kind.sh where no engine can run.

As an unprivileged user (setpriv) with DOCKER_HOST pointing at a socket
nobody serves, `start` must refuse with exit 3 and a reason naming the uid,
start nothing, and the kind tier must be reported as SKIPPED with that
reason: never as passed, never as a failure of the product.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
NOBODY = "65534"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to run as another user"
)


def as_nobody(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "DOCKER_HOST": f"unix://{tmp_path}/nobody-serves-this.sock",
        "DOCKER_ENGINE_STATE": str(tmp_path / "state"),
    }
    tmp_path.chmod(0o777)
    return subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )


def test_start_refuses_without_root_and_names_why(tmp_path: Path) -> None:
    done = as_nobody(tmp_path, str(REPO / "scripts" / "docker-engine.sh"), "start")
    assert done.returncode == 3, done.stderr
    assert f"no Docker engine: dockerd needs root (this is uid {NOBODY})" in done.stderr
    assert not (tmp_path / "state" / "dockerd.pid").exists()


def test_status_says_no_engine_answers(tmp_path: Path) -> None:
    done = as_nobody(tmp_path, str(REPO / "scripts" / "docker-engine.sh"), "status")
    assert done.returncode == 1
    assert "no engine answers" in done.stderr


def test_the_kind_tier_is_reported_skipped_with_the_reason(tmp_path: Path) -> None:
    done = as_nobody(tmp_path, str(REPO / "scripts" / "test-kind.sh"))
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert line == (
        "SKIPPED: molecule kind scenario: no Docker engine can run here: "
        f"dockerd needs root (this is uid {NOBODY})"
    )
    assert "passed" not in done.stdout

"""provider `auto`: kind when a Docker engine answers the Docker API, else kwok, and the reason says which.

Through real ansible-playbook runs of the cluster_provider role's choose.yml,
which asks the engine with community.docker.docker_host_info: a socket nobody
serves stands for a machine without an engine; the real engine, when one
answers here, for a machine with one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import playbook_json
from tests.support.playbook_json import run_playbook


def choose(tmp_path: Path, **extra: object) -> tuple[str, str]:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "cluster_provider",
            "choose",
            {"ansible.builtin.debug": {"msg": "{{ [cluster_provider_resolved, cluster_provider_reason] }}"}},
        ),
        {"cluster_provider": "auto", **extra},
    )
    assert run.returncode == 0, run.report
    resolved, reason = run.messages()[-2:]
    return resolved, reason


def engine_version() -> str | None:
    """The server version of the Docker engine answering here, or None."""
    try:
        done = subprocess.run(
            ["docker", "version", "--format", "{{json .Server.Version}}"],
            capture_output=True, text=True, timeout=20, check=False,
        )
    except FileNotFoundError:
        return None
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def test_no_engine_means_kwok_and_names_the_endpoint(tmp_path: Path) -> None:
    socket = f"unix://{tmp_path}/nobody-serves-this.sock"
    resolved, reason = choose(tmp_path, cluster_provider_docker_host=socket)
    assert resolved == "kwok"
    assert reason.startswith(f"auto: no Docker engine answers at {socket} (")


def test_a_given_provider_is_kept_without_asking(tmp_path: Path) -> None:
    socket = f"unix://{tmp_path}/nobody-serves-this.sock"
    resolved, reason = choose(tmp_path, cluster_provider="kind", cluster_provider_docker_host=socket)
    assert (resolved, reason) == ("kind", "cluster_provider is set to kind")


def test_an_answering_engine_means_kind_with_its_version(tmp_path: Path) -> None:
    version = engine_version()
    if version is None:
        pytest.skip("no Docker engine answers here (scripts/docker-engine.sh start)")
    resolved, reason = choose(tmp_path)
    assert (resolved, reason) == ("kind", f"auto: a Docker engine answers (server {version})")

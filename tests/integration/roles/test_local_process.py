"""local_process: wait for a detached local process and stop it, through ansible-playbook.

Both scheduler roles start their kwok-path process their own way and share
these two task files; a small HTTP server stands in for the scheduler here
(the kwok tests run the real ones).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kwok import free_port, wait_for
from tests.support.playbook_json import run_playbook


def play(tasks_from: str, variables: dict[str, Any]) -> list[dict[str, Any]]:
    include = {"name": "interference.orchestrator.local_process", "tasks_from": tasks_from}
    return [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{"ansible.builtin.include_role": include, "vars": variables}],
        }
    ]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
            cwd=tmp_path,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    pid_file = tmp_path / "server.pid"
    pid_file.write_text(f"{proc.pid}\n")
    yield {"proc": proc, "port": port, "log": log, "pid_file": pid_file}
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def variables(server: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "local_process_name": "test server",
        "local_process_health_url": f"http://127.0.0.1:{server['port']}/",
        "local_process_log": str(server["log"]),
        "local_process_pid_file": str(server["pid_file"]),
        "local_process_cmdline_match": "http.server",
        "local_process_host": "127.0.0.1",
        "local_process_port": server["port"],
        **extra,
    }


def test_wait_returns_once_the_process_answers_and_stop_ends_it(server: dict[str, Any], tmp_path: Path) -> None:
    run = run_playbook(tmp_path, play("wait.yml", variables(server)))
    assert run.returncode == 0, run.report
    assert run.results("Wait until it answers on " + f"http://127.0.0.1:{server['port']}/")[0]["status"] == 200

    run = run_playbook(tmp_path, play("stop.yml", variables(server)))
    assert run.returncode == 0, run.report
    assert run.results("Stop the running process")[0]["changed"] is True
    assert wait_for("the server to exit", lambda: server["proc"].poll() is not None, timeout=30)
    assert not server["pid_file"].exists()


def test_a_pid_now_running_another_program_is_not_killed(server: dict[str, Any], tmp_path: Path) -> None:
    run = run_playbook(tmp_path, play("stop.yml", variables(server, local_process_cmdline_match="gpu-scheduler")))
    # The server still holds the port, so the wait for it to be free times out: it was not killed.
    assert run.returncode != 0
    assert run.results("Stop the running process")[0].get("skipped") is True
    assert server["proc"].poll() is None


def test_a_process_that_never_answers_fails_with_its_log(server: dict[str, Any], tmp_path: Path) -> None:
    server["log"].write_text("starting\nerror: bad --config\n")
    dead = free_port()
    run = run_playbook(
        tmp_path,
        play(
            "wait.yml",
            variables(server, local_process_health_url=f"http://127.0.0.1:{dead}/", local_process_wait_seconds=2),
        ),
    )
    assert run.returncode != 0
    message = run.results("Say why the process did not start")[0]["msg"]
    assert "The test server did not answer" in message and "error: bad --config" in message


def test_stop_without_a_pid_file_changes_nothing(tmp_path: Path) -> None:
    port = free_port()
    run = run_playbook(
        tmp_path,
        play(
            "stop.yml",
            {
                "local_process_pid_file": str(tmp_path / "none.pid"),
                "local_process_cmdline_match": "x",
                "local_process_host": "127.0.0.1",
                "local_process_port": port,
            },
        ),
    )
    assert run.returncode == 0, run.report
    assert run.stats["changed"] == 0

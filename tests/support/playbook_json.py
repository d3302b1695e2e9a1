"""Run a real ansible-playbook against the checkout and read its JSON report.

Role tests use this to render templates and run task files exactly as
site.yml does (same ansible.cfg, same collection resolution), then assert
on the files written and on each task's result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
# localhost only: the role tests' inventory (their playbooks give every variable they need).
BARE_INVENTORY = REPO / "tests" / "support" / "localhost.yml"
# The repository's example inventory (demo apps, cluster settings): what `make site` uses.
EXAMPLE_INVENTORY = REPO / "examples" / "testbed" / "hosts.yml"


@dataclass
class PlaybookRun:
    """Outcome of one ansible-playbook run (json callback)."""

    returncode: int
    report: dict[str, Any]
    stderr: str

    @property
    def stats(self) -> dict[str, int]:
        """Recap counters of localhost: ok, changed, failures, skipped, ..."""
        return dict(self.report["stats"]["localhost"])

    def results(self, task_name: str) -> list[dict[str, Any]]:
        """Results of every run of the task named `task_name` (role prefix ignored)."""
        found = []
        for play in self.report["plays"]:
            for task in play["tasks"]:
                name = task["task"]["name"]
                if name == task_name or name.endswith(" : " + task_name):
                    found.append(task["hosts"]["localhost"])
        return found

    def failures(self) -> str:
        """Each failed task (rescued ones too, ignore_errors ones not) with its message, then the stderr."""
        lines = []
        for play in self.report["plays"]:
            for task in play["tasks"]:
                result = task["hosts"].get("localhost", {})
                if result.get("failed") and not result.get("ignore_errors"):
                    lines.append(f"{task['task']['name']}: {result.get('msg', '')}")
                    lines.extend(f"  item {r.get('item')!r}: {r.get('msg', '')}"
                                 for r in result.get("results", []) if r.get("failed"))
        return "\n".join([f"exit {self.returncode}, stats {self.report.get('stats', {})}", *lines, self.stderr[-3000:]])

    def messages(self) -> list[str]:
        """Every message the debug tasks printed, flattened to strings."""
        out: list[str] = []
        for play in self.report["plays"]:
            for task in play["tasks"]:
                result = task["hosts"].get("localhost", {})
                if not result.get("action", "").endswith("debug") or result.get("skipped"):
                    continue
                msg = result.get("msg")
                out.extend(str(m) for m in msg) if isinstance(msg, list) else out.append(str(msg))
        return out


def run_playbook(
    tmp_path: Path,
    plays: list[dict[str, Any]],
    extra_vars: dict[str, Any] | None = None,
    *,
    check: bool = False,
    env: dict[str, str] | None = None,
) -> PlaybookRun:
    """Write `plays` to a playbook in tmp_path and run it from the repository root."""
    playbook = tmp_path / f"playbook-{len(list(tmp_path.glob('playbook-*.yml')))}.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    return run_playbook_file(tmp_path, playbook, extra_vars, check=check, env=env)


def run_playbook_file(
    tmp_path: Path,
    playbook: Path,
    extra_vars: dict[str, Any] | None = None,
    *,
    check: bool = False,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> PlaybookRun:
    """Run one playbook of the checkout (site.yml...) or of tmp_path, with the json callback; `args` are appended.

    The checkout's playbooks run with the example inventory (as `make site` does), tmp_path's with localhost only.
    """
    return start_playbook_file(tmp_path, playbook, extra_vars, check=check, env=env, args=args).finish()


@dataclass
class RunningPlaybook:
    """An ansible-playbook started in the background (concurrency and interruption tests)."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def finish(self, timeout: float | None = None) -> PlaybookRun:
        """Wait for the run to end and read its JSON report."""
        self.process.wait(timeout=timeout)
        out, err = self.stdout.read_text(), self.stderr.read_text()
        try:
            report = json.loads(out)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"ansible-playbook printed no JSON report:\n{out}\n{err}") from exc
        return PlaybookRun(self.process.returncode, report, err)


def start_playbook_file(
    tmp_path: Path,
    playbook: Path,
    extra_vars: dict[str, Any] | None = None,
    *,
    check: bool = False,
    env: dict[str, str] | None = None,
    args: list[str] | None = None,
) -> RunningPlaybook:
    """Start one playbook like run_playbook_file, without waiting; its output goes to files in tmp_path."""
    number = len(list(tmp_path.glob("extra-vars-*.json")))
    vars_file = tmp_path / f"extra-vars-{number}.json"
    inventory = EXAMPLE_INVENTORY if playbook.resolve().is_relative_to(REPO.resolve()) else BARE_INVENTORY
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(playbook)]
    if extra_vars is not None:
        vars_file.write_text(json.dumps(extra_vars))
        argv += ["-e", f"@{vars_file}"]
    else:
        vars_file.write_text("{}")
    if check:
        argv += ["--check", "--diff"]
    argv += args or []
    run_env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **(env or {}),
    }
    stdout, stderr = tmp_path / f"run-{number}.stdout", tmp_path / f"run-{number}.stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen(argv, cwd=REPO, env=run_env, stdout=out, stderr=err)
    return RunningPlaybook(process, stdout, stderr)


def role_play(role: str, tasks_from: str = "main", *after: dict[str, Any]) -> list[dict[str, Any]]:
    """A one-play playbook on localhost that runs one task file of one of our roles, then `after`."""
    include = {"name": f"interference.orchestrator.{role}", "tasks_from": tasks_from}
    return [{"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.include_role": include}, *after]}]


def run_role_entry_point(directory: Path, role: str, tasks_from: str, variables: dict[str, Any]) -> None:
    """Run one task file of one of our roles with `variables`, as site.yml would; fail loudly if it fails.

    For harnesses that need what a role renders (a scheduler configuration)
    rather than a report of the run.
    """
    directory.mkdir(parents=True, exist_ok=True)
    playbook = directory / f"run-{role}-{tasks_from}.yml"
    include = {"name": f"interference.orchestrator.{role}", "tasks_from": tasks_from}
    task = {"name": f"Run {role} {tasks_from}", "ansible.builtin.include_role": include, "vars": variables}
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(BARE_INVENTORY), str(playbook)],
        check=True, cwd=REPO, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
        capture_output=True, text=True,
    )

"""scripts/phase.sh: the timed phases of a CI run, and what the innermost failed one said.

A CI report shows only the end of the log. A failure far above it (molecule's
create, followed by its destroy and by the other job's held output) was once
reported as nothing more than "Ansible return code was 2": --failures names
it again under the table.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.playbook_json import REPO

PHASE = REPO / "scripts" / "phase.sh"

# An outer phase around a passing one and a failing one whose cause comes before a long clean-up.
INNER = f"""
{PHASE} ok bash -c 'echo fine'
{PHASE} kind bash -c '
  echo TASK create
  printf "\\033[0;31mfatal: [localhost]: FAILED! => changed=false\\033[0m\\n"
  echo "  msg: could not pull kindest/node"
  for i in $(seq 60); do echo "destroy step $i"; done
  exit 2'
"""


def run(tmp_path: Path, *args: str, keep_output: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PHASE_LOG": str(tmp_path / "phases.tsv")}
    env.pop("PHASE_OUTPUT", None)
    if keep_output:
        env["PHASE_OUTPUT"] = str(tmp_path / "output")
    return subprocess.run([str(PHASE), *args], env=env, capture_output=True, text=True, check=False, timeout=60)


def test_a_phase_keeps_its_exit_code_and_its_output(tmp_path: Path) -> None:
    outer = run(tmp_path, "outer", "bash", "-c", INNER)
    assert outer.returncode == 2
    assert "destroy step 60" in outer.stdout  # still printed as it goes
    assert "could not pull kindest/node" in (tmp_path / "output" / "kind.log").read_text()
    rows = [line.split("\t") for line in (tmp_path / "phases.tsv").read_text().splitlines()]
    assert [(row[0], row[4]) for row in rows] == [("ok", "0"), ("kind", "2"), ("outer", "2")]
    table = run(tmp_path, "--summary").stdout.splitlines()
    assert table[0].split() == ["phase", "start", "end", "duration", "exit"]
    assert [line.split()[0] for line in table[1:]] == ["ok", "kind", "outer"]


def test_failures_names_the_innermost_failed_phase_and_its_cause(tmp_path: Path) -> None:
    run(tmp_path, "outer", "bash", "-c", INNER)
    failures = run(tmp_path, "--failures").stdout
    assert "[phase] kind failed; what it said:" in failures
    assert "outer failed" not in failures and "ok failed" not in failures
    # The cause, without its colours, and not the 60 lines of clean-up after it.
    assert "fatal: [localhost]: FAILED! => changed=false\n  msg: could not pull kindest/node" in failures
    assert "\033[" not in failures
    assert "destroy step 40" not in failures


def test_failures_says_so_when_the_output_was_not_kept(tmp_path: Path) -> None:
    run(tmp_path, "outer", "bash", "-c", INNER, keep_output=False)
    assert not (tmp_path / "output").exists()
    failures = run(tmp_path, "--failures", keep_output=False).stdout
    assert "[phase] kind failed" in failures and "its output was not kept" in failures


def test_a_run_that_passed_has_no_failures(tmp_path: Path) -> None:
    assert run(tmp_path, "fine", "true").returncode == 0
    assert run(tmp_path, "--failures").stdout == ""

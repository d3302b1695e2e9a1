"""scripts/runc-drop-caps: what it hands to runc, with a stand-in runc that records it.

The wrapper reads this process's own bounding set, so the expectation is
computed from /proc/self/status too: on a host that lacks a capability (ours
lacks CAP_SYS_RESOURCE) it must be gone from every list; on a host that has
them all, nothing may change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WRAPPER = REPO / "scripts" / "runc-drop-caps"
CAPABILITY_NAMES = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]
ALL = [f"CAP_{name}" for name in CAPABILITY_NAMES]

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed (the wrapper needs it)")


def bounding_set() -> set[str]:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("CapBnd:"))
    bits = int(line.split()[1], 16)
    return {cap for bit, cap in enumerate(ALL) if bits >> bit & 1}


@pytest.fixture
def fake_runc(tmp_path: Path) -> Path:
    """A runc that records its arguments and the files it would read."""
    runc = tmp_path / "runc"
    runc.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {tmp_path}/args\n'
        f"[ -f bundle/config.json ] && cp bundle/config.json {tmp_path}/seen-config.json\n"
        f"[ -f process.json ] && cp process.json {tmp_path}/seen-process.json\n"
        "exit 0\n"
    )
    runc.chmod(0o755)
    return runc


def run(tmp_path: Path, fake_runc: Path, *args: str) -> list[str]:
    subprocess.run(
        [str(WRAPPER), *args], cwd=tmp_path, check=True, env={**os.environ, "RUNC_DROP_CAPS_RUNC": str(fake_runc)}
    )
    return (tmp_path / "args").read_text().splitlines()


def privileged_process() -> dict[str, object]:
    return {
        "args": ["/sbin/init"],
        "capabilities": {kind: list(ALL) for kind in ("bounding", "effective", "permitted", "inheritable")},
    }


def test_create_drops_exactly_what_the_bounding_set_lacks(tmp_path: Path, fake_runc: Path) -> None:
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "config.json").write_text(json.dumps({"process": privileged_process(), "root": {}}))
    args = run(tmp_path, fake_runc, "--root", "/run/runc", "create", "--bundle", "bundle", "c1")
    assert args == ["--root", "/run/runc", "create", "--bundle", "bundle", "c1"]
    seen = json.loads((tmp_path / "seen-config.json").read_text())
    expected = [cap for cap in ALL if cap in bounding_set()]
    for kind, caps in seen["process"]["capabilities"].items():
        assert caps == expected, kind
    assert seen["root"] == {}  # the rest of the spec is untouched


def test_exec_process_file_is_treated_the_same(tmp_path: Path, fake_runc: Path) -> None:
    (tmp_path / "process.json").write_text(json.dumps(privileged_process()))
    run(tmp_path, fake_runc, "exec", "--process", "process.json", "c1")
    seen = json.loads((tmp_path / "seen-process.json").read_text())
    assert seen["capabilities"]["effective"] == [cap for cap in ALL if cap in bounding_set()]


def test_other_commands_pass_through_untouched(tmp_path: Path, fake_runc: Path) -> None:
    assert run(tmp_path, fake_runc, "--version") == ["--version"]
    # "run" after "delete" is a container ID, not a second command: no bundle is read.
    (tmp_path / "bundle").mkdir()
    assert run(tmp_path, fake_runc, "delete", "--force", "run") == ["delete", "--force", "run"]

"""cluster_provider `existing`: the kubeconfig's credentials never reach the output.

The connection_existing.yml task file reads the user's kubeconfig (client
keys, tokens) to find its current context; it runs here, through
ansible-playbook, on kubeconfig files written by the test.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.playbook_json import PlaybookRun, role_play, run_playbook

TOKEN = "s3cret-kubeconfig-token-0123456789"
KEY = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tc2VjcmV0LWtleQ=="


def kubeconfig(current_context: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current_context,
        "clusters": [{"name": "eks", "cluster": {"server": "https://example.invalid"}}],
        "contexts": [{"name": current_context, "context": {"cluster": "eks", "user": "admin"}}],
        "users": [{"name": "admin", "user": {"token": TOKEN, "client-key-data": KEY}}],
    }


def connect(tmp_path: Path, content: str) -> tuple[PlaybookRun, str]:
    """Run connection_existing.yml on a kubeconfig holding `content`; returns the run and everything it printed."""
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    show = {"name": "Show the context", "ansible.builtin.debug": {"msg": "context={{ cluster_context }}"}}
    run = run_playbook(
        tmp_path, role_play("cluster_provider", "connection_existing", show), {"cluster_kubeconfig": str(path)}
    )
    return run, json.dumps(run.report) + run.stderr


def assert_no_credential(output: str, content: str) -> None:
    """Neither a secret nor the file as slurp returns it (base64) is in the output."""
    assert TOKEN not in output
    assert KEY not in output
    assert base64.b64encode(content.encode()).decode()[:40] not in output


def test_the_current_context_is_read_and_no_credential_is_printed(tmp_path: Path) -> None:
    content = yaml.safe_dump(kubeconfig("arn:aws:eks:eu-west-1:123:cluster/lab"))
    run, output = connect(tmp_path, content)
    assert run.returncode == 0, run.report
    assert "context=arn:aws:eks:eu-west-1:123:cluster/lab" in run.messages()
    assert_no_credential(output, content)


def test_an_unreadable_kubeconfig_fails_with_advice_and_no_credential(tmp_path: Path) -> None:
    # Not YAML: the parser's error would quote the text around the fault.
    content = f"users: [{{token: {TOKEN}, client-key-data: {KEY}}}\n  current-context: : [\n"
    run, output = connect(tmp_path, content)
    assert run.returncode != 0
    assert "cannot read a current context from" in output
    assert "Give cluster_kubeconfig" in output
    assert_no_credential(output, content)

"""monitoring: the objects the role writes, on a real API server (kwokctl, local binaries).

The chart itself needs the chart repository and real containers (molecule `kind` scenario).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.support import kwok
from tests.support.playbook_json import run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

PASSWORD = "s3cret-Grafana-pw"


def test_namespace_credentials_and_dashboard_apply_on_a_real_api_server_and_reapply_unchanged(
    tmp_path: Path,
) -> None:
    """The role's namespace, credentials and dashboard task files against kube-apiserver (kwokctl, local binaries).

    The chart itself needs the chart repository and real containers (molecule `kind` scenario).
    """
    cluster = kwok.KwokCluster(name=f"mon-{kwok.free_port()}", workdir=tmp_path / "kwok")
    cluster.create()
    try:
        plays = [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "tasks": [
                    {
                        "ansible.builtin.include_role": {
                            "name": "interference.orchestrator.monitoring",
                            "tasks_from": step,
                        }
                    }
                    for step in ("namespace", "credentials", "dashboard")
                ],
            }
        ]
        variables = {
            "cluster_kubeconfig": str(cluster.kubeconfig),
            "cluster_context": f"kwok-{cluster.name}",
            "_monitoring_grafana_password": PASSWORD,
        }
        first = run_playbook(tmp_path, plays, variables)
        assert first.returncode == 0, first.report
        assert first.stats["changed"] == 3
        assert PASSWORD not in json.dumps(first.report) + first.stderr
        second = run_playbook(tmp_path, plays, variables)
        assert second.returncode == 0, second.report
        assert second.stats["changed"] == 0

        core = cluster.api()
        configmap = core.read_namespaced_config_map("interference-overview-dashboard", "monitoring")
        assert configmap.metadata.labels["grafana_dashboard"] == "1"
        dashboard = json.loads(configmap.data["interference-overview.json"])
        assert dashboard["uid"] == "interference-overview"
        secret = core.read_namespaced_secret("grafana-admin-credentials", "monitoring")
        assert base64.b64decode(secret.data["admin-password"]).decode() == PASSWORD
    finally:
        cluster.delete()

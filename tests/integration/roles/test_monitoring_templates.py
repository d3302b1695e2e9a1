"""monitoring: chart values, the dashboard ConfigMap, the admin Secret, the
password handling and the kwok / check-mode skips, through ansible-playbook.

Manifests are validated against the Kubernetes 1.34 schema (kubernetes-validate,
strict: unknown fields fail). The helm install itself needs a cluster with real
containers and the chart repository: the molecule `kind` scenario covers it.
"""

from __future__ import annotations

import base64
import json
import re
import stat
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support import playbook_json
from tests.support.cluster_contract import cluster_vars
from tests.support.playbook_json import REPO, run_playbook

ROLE = REPO / "roles" / "monitoring"
K8S_VERSION = "1.34.0"
PASSWORD = "s3cret-Grafana-pw"


def render(tmp_path: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Render the role's three templates with its defaults; return them parsed."""
    out = tmp_path / "rendered"
    templates = ["values.yaml.j2", "dashboard-configmap.yaml.j2", "grafana-admin-secret.yaml.j2"]
    run = run_playbook(
        tmp_path,
        [
            {
                "hosts": "localhost",
                "gather_facts": False,
                "vars_files": [str(ROLE / "defaults" / "main.yml")],
                "vars": {
                    "monitoring_dashboard_json": "{{ lookup('ansible.builtin.file', '%s') }}"
                    % (ROLE / "files" / "interference-overview.json"),
                    "_monitoring_grafana_password": PASSWORD,
                },
                "tasks": [
                    {"ansible.builtin.file": {"path": str(out), "state": "directory", "mode": "0700"}},
                    {
                        "ansible.builtin.template": {
                            "src": str(ROLE / "templates" / "{{ item }}"),
                            "dest": str(out / "{{ item }}"),
                            "mode": "0600",
                        },
                        "loop": templates,
                    },
                ],
            }
        ],
        extra or {},
    )
    assert run.returncode == 0, run.report
    return {name.split(".")[0]: yaml.safe_load((out / name).read_text()) for name in templates}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return render(tmp_path_factory.mktemp("monitoring"))


def test_values_publish_grafana_on_the_nodeport_kind_maps(rendered: dict[str, Any]) -> None:
    grafana = rendered["values"]["grafana"]
    assert grafana["service"] == {"type": "NodePort", "nodePort": 30300}
    kind_defaults = yaml.safe_load((REPO / "roles" / "kind_cluster" / "defaults" / "main.yml").read_text())
    assert "grafana_node_port | default(30300)" in kind_defaults["kind_cluster_grafana_node_port"]


def test_values_take_the_admin_password_from_our_secret_never_the_chart_default(rendered: dict[str, Any]) -> None:
    grafana = rendered["values"]["grafana"]
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin-credentials",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    values_text = json.dumps(rendered["values"])
    assert "adminPassword" not in values_text
    assert "prom-operator" not in values_text
    assert PASSWORD not in values_text


def test_values_enable_the_dashboard_sidecar_on_the_label_the_configmap_carries(rendered: dict[str, Any]) -> None:
    sidecar = rendered["values"]["grafana"]["sidecar"]["dashboards"]
    labels = rendered["dashboard-configmap"]["metadata"]["labels"]
    assert sidecar["enabled"] is True
    assert labels[sidecar["label"]] == sidecar["labelValue"] == "1"


def ksm_label(pod_label: str) -> str:
    """Name kube-state-metrics gives a pod label on kube_pod_labels."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", pod_label)


def test_kube_state_metrics_exports_exactly_the_labels_the_dashboard_groups_by(rendered: dict[str, Any]) -> None:
    allowlist = rendered["values"]["kube-state-metrics"]["metricLabelsAllowlist"]
    assert allowlist == ["pods=[app.kubernetes.io/name,interference.orchestrator/type]"]
    exported = {ksm_label(label) for label in allowlist[0].removeprefix("pods=[").removesuffix("]").split(",")}
    dashboard = json.loads(rendered["dashboard-configmap"]["data"]["interference-overview.json"])
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        for name in re.findall(r"label_[a-z0-9_]+", target["expr"])
    }
    assert used == exported == {"label_app_kubernetes_io_name", "label_interference_orchestrator_type"}


def test_dashboard_configmap_is_a_valid_kubernetes_object(rendered: dict[str, Any]) -> None:
    configmap = rendered["dashboard-configmap"]
    kubernetes_validate.validate(configmap, K8S_VERSION, strict=True)
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["name"] == "interference-overview-dashboard"


def test_dashboard_shows_per_node_cpu_and_memory_stacked_by_app_with_the_type(rendered: dict[str, Any]) -> None:
    dashboard = json.loads(rendered["dashboard-configmap"]["data"]["interference-overview.json"])
    assert dashboard["title"] == "Interference overview"
    assert dashboard["uid"] == "interference-overview"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "node"} <= set(variables)
    panels = {p["title"]: p for p in dashboard["panels"]}
    row = panels["Node $node"]
    assert row["type"] == "row" and row["repeat"] == "node"
    for title, metric, unit in (
        ("CPU by app on $node", "container_cpu_usage_seconds_total", "short"),
        ("Memory by app on $node", "container_memory_working_set_bytes", "bytes"),
    ):
        panel = panels[title]
        assert panel["type"] == "timeseries"
        assert panel["gridPos"]["y"] > row["gridPos"]["y"]  # inside the repeated row
        assert panel["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"
        assert panel["fieldConfig"]["defaults"]["unit"] == unit
        (target,) = panel["targets"]
        assert metric in target["expr"]
        assert 'node="$node"' in target["expr"]
        assert target["expr"].startswith("sum by (label_app_kubernetes_io_name, label_interference_orchestrator_type)")
        assert "{{label_interference_orchestrator_type}}" in target["legendFormat"]
    table = panels["Placement: app, interference type, node"]
    renamed = table["transformations"][0]["options"]["renameByName"]
    assert set(renamed.values()) == {"Node", "App", "Interference type"}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_admin_secret_is_valid_and_carries_the_password(rendered: dict[str, Any]) -> None:
    secret = rendered["grafana-admin-secret"]
    kubernetes_validate.validate(secret, K8S_VERSION, strict=True)
    assert secret["metadata"]["name"] == rendered["values"]["grafana"]["admin"]["existingSecret"]
    assert base64.b64decode(secret["data"]["admin-password"]).decode() == PASSWORD
    assert base64.b64decode(secret["data"]["admin-user"]).decode() == "admin"


def test_extra_values_and_ports_reach_the_templates(tmp_path: Path) -> None:
    out = render(tmp_path, {"grafana_node_port": 31234, "monitoring_namespace": "obs"})
    assert out["values"]["grafana"]["service"]["nodePort"] == 31234
    assert out["dashboard-configmap"]["metadata"]["namespace"] == "obs"
    assert out["grafana-admin-secret"]["metadata"]["namespace"] == "obs"


# --- the role's own flow: password, kwok skip, check mode --------------------


def role_play(tasks_from: str = "main") -> list[dict[str, Any]]:
    return playbook_json.role_play("monitoring", tasks_from)


def test_generates_the_password_once_stores_it_0600_and_never_prints_it(tmp_path: Path) -> None:
    secret_file = tmp_path / "config" / "grafana-admin-password"
    first = run_playbook(tmp_path, role_play("password"), {"monitoring_grafana_password_file": str(secret_file)})
    assert first.returncode == 0, first.report
    password = secret_file.read_text().strip()
    assert re.fullmatch(r"[A-Za-z0-9]{32}", password)
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret_file.parent.stat().st_mode) == 0o700
    assert password not in json.dumps(first.report) + first.stderr

    second = run_playbook(tmp_path, role_play("password"), {"monitoring_grafana_password_file": str(secret_file)})
    assert second.returncode == 0, second.report
    assert second.stats["changed"] == 0
    assert secret_file.read_text().strip() == password
    assert password not in json.dumps(second.report) + second.stderr


def test_a_stored_password_file_open_to_others_is_set_to_0600_with_a_warning(tmp_path: Path) -> None:
    secret_file = tmp_path / "config" / "grafana-admin-password"
    secret_file.parent.mkdir(mode=0o700)
    secret_file.write_text(PASSWORD + "\n")
    secret_file.chmod(0o644)
    variables = {"monitoring_grafana_password_file": str(secret_file)}

    check = run_playbook(tmp_path, role_play("password"), variables, check=True)
    assert check.returncode == 0, check.report
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o644, "check mode changed the mode"
    assert any("has mode 0644" in m and "it would be set to 0600" in m for m in check.messages())

    run = run_playbook(tmp_path, role_play("password"), variables)
    assert run.returncode == 0, run.report
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    [warning] = [m for m in run.messages() if "WARNING" in m]
    assert f"{secret_file} has mode 0644" in warning
    assert "setting it to 0600" in warning
    assert secret_file.read_text().strip() == PASSWORD, "the stored password is kept"
    assert PASSWORD not in json.dumps(run.report) + run.stderr

    again = run_playbook(tmp_path, role_play("password"), variables)
    assert again.returncode == 0, again.report
    assert again.stats["changed"] == 0
    assert not [m for m in again.messages() if "WARNING" in m]


def test_a_supplied_password_is_used_and_nothing_is_stored(tmp_path: Path) -> None:
    secret_file = tmp_path / "config" / "grafana-admin-password"
    run = run_playbook(
        tmp_path,
        role_play("password"),
        {
            "monitoring_grafana_password_file": str(secret_file),
            "monitoring_grafana_admin_password": PASSWORD,
        },
    )
    assert run.returncode == 0, run.report
    assert not secret_file.exists()
    assert PASSWORD not in json.dumps(run.report) + run.stderr


@pytest.mark.parametrize("password", ["prom-operator", "short"])
def test_the_chart_default_or_a_short_password_is_refused(tmp_path: Path, password: str) -> None:
    run = run_playbook(
        tmp_path,
        role_play("password"),
        {
            "monitoring_grafana_password_file": str(tmp_path / "pw"),
            "monitoring_grafana_admin_password": password,
        },
    )
    assert run.returncode != 0
    assert "must not be the chart's default" in json.dumps(run.report)


def test_kwok_skips_with_one_debug_line_and_touches_nothing(tmp_path: Path) -> None:
    secret_file = tmp_path / "pw"
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("kwok"),
            "monitoring_grafana_password_file": str(secret_file),
        },
    )
    assert run.returncode == 0, run.report
    assert run.stats["changed"] == 0
    (message,) = run.messages()
    assert message.startswith("monitoring: skipped on kwok")
    assert "\n" not in message  # one line
    assert not secret_file.exists()


def test_check_mode_before_the_cluster_exists_generates_stores_and_installs_nothing(tmp_path: Path) -> None:
    secret_file = tmp_path / "config" / "pw"
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("kind"),
            "kind_cluster_exists": False,
            "monitoring_grafana_password_file": str(secret_file),
            # Any call to a cluster would fail on this kubeconfig.
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
            "cluster_context": "kind-cluster-kind",
        },
        check=True,
    )
    assert run.returncode == 0, run.report
    assert not secret_file.exists() and not secret_file.parent.exists()
    assert any("a real run would generate and store the password" in m for m in run.messages())
    assert run.results("Install the chart and the dashboard")[0].get("skipped") is True
    assert any(m.startswith("Grafana: http://localhost:3000") for m in run.messages())


@pytest.mark.parametrize("mode", ["off", False])  # False: what YAML 1.1 makes of a bare `off`
def test_off_is_one_line_and_touches_nothing(tmp_path: Path, mode: object) -> None:
    secret_file = tmp_path / "pw"
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("existing"),
            "monitoring_mode": mode,
            "monitoring_grafana_password_file": str(secret_file),
            # Any call to a cluster would fail on this kubeconfig.
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
        },
    )
    assert run.returncode == 0, run.report
    assert run.messages() == ["monitoring: skipped: monitoring_mode is off."]
    assert run.stats["changed"] == 0
    assert not secret_file.exists()


def test_auto_on_kind_installs_and_says_why(tmp_path: Path) -> None:
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("kind"),
            "kind_cluster_exists": False,
            "monitoring_grafana_password_file": str(tmp_path / "pw"),
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
        },
        check=True,
    )
    assert run.returncode == 0, run.report
    assert run.messages()[0] == (
        "monitoring: install (auto on kind): kube-prometheus-stack 83.4.3 as release kube-prometheus-stack in"
        " namespace monitoring, with the Interference overview dashboard and the interference probe (release"
        " interference-probe, a PodMonitor); chosen because a registry answers (image source registry)."
    )


def test_offline_on_kind_chooses_the_offline_chart_says_why_and_that_grafana_is_not_installed(tmp_path: Path) -> None:
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("kind"),
            "cluster_provider_image_source": "offline",
            "kind_cluster_exists": False,
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
        },
        check=True,
    )
    assert run.returncode == 0, run.report
    line = run.messages()[0]
    assert line.startswith("monitoring: install (auto on kind): the collection's offline chart as release"
                           " interference-monitoring in namespace monitoring: Prometheus 2.42 and node-exporter"), line
    assert "chosen because the image source is offline" in line
    assert "Grafana is not installed: it is AGPL-licensed and cannot be had offline here" in line
    assert any("the cluster does not exist yet; a real run would build the Prometheus and probe images" in m
               for m in run.messages())
    assert run.stats["changed"] == 0


def test_offline_on_an_existing_cluster_without_a_registry_is_skipped_with_the_reason(tmp_path: Path) -> None:
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("existing"),
            "cluster_provider_image_source": "offline",
            "monitoring_mode": "install",
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
        },
    )
    assert run.returncode == 0, run.report
    (line,) = run.messages()
    assert line.startswith("monitoring: skipped on existing: the image source is offline"), line
    assert "without images_registry" in line


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"monitoring_probe_interval": "100ms"}, "monitoring_probe_interval 100ms must be longer than"
                                                 " monitoring_probe_duration 100ms"),
        ({"monitoring_probe_duration": "ten"}, "monitoring_probe_duration ten is not a duration"),
        ({"monitoring_probe_memory_bytes": 268435456}, "do not fit monitoring_probe_memory_limit 128Mi"),
        ({"monitoring_probe_memory_bytes": 4096}, "monitoring_probe_memory_bytes 4096 must be larger than"),
    ],
)
def test_probe_settings_out_of_range_are_refused_before_anything_is_applied(
    tmp_path: Path, bad: dict[str, Any], named: str
) -> None:
    run = run_playbook(
        tmp_path,
        role_play(),
        {
            **cluster_vars("kind"),
            "cluster_provider_image_source": "offline",
            # A real (not check) run: it must stop before building or applying anything.
            "cluster_kubeconfig": str(tmp_path / "missing-kubeconfig"),
            **bad,
        },
    )
    assert run.returncode != 0
    assert named in json.dumps(run.report)
    assert run.stats["changed"] == 0
    assert not run.results("Name the Prometheus image")

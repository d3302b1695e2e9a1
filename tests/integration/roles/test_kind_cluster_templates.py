"""kind_cluster: the rendered kind config, and the create / reuse / delete flow.

The config is rendered by the role's own task file through ansible-playbook.
The flow tests run the whole role with a stand-in `kind` (stubs/kind): no
Docker engine here, so they prove the role's decisions (when it creates,
reuses, exports the kubeconfig, deletes; what it reports as changed), not
kind itself. The molecule `kind` scenario runs the real thing.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import playbook_json
from tests.support.kwok import free_port
from tests.support.playbook_json import run_playbook
from tests.support.tools import tools_bin

STUB_KIND = Path(playbook_json.__file__).parent / "stubs" / "kind"


def render_config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    out = tmp_path / "out"
    run = run_playbook(
        tmp_path,
        playbook_json.role_play("kind_cluster", "config"),
        {"kind_cluster_config_dir": str(out), **extra},
    )
    assert run.returncode == 0, run.report
    name = extra.get("cluster_name", "cluster-kind")
    return yaml.safe_load((out / f"kind-{name}.yaml").read_text())


def test_default_config_has_one_control_plane_two_workers_grafana_on_3000_and_prometheus_on_9090(
    tmp_path: Path,
) -> None:
    config = render_config(tmp_path)
    assert config["kind"] == "Cluster"
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert config["name"] == "cluster-kind"
    assert [node["role"] for node in config["nodes"]] == ["control-plane", "worker", "worker"]
    assert config["nodes"][0]["extraPortMappings"] == [
        {"containerPort": 30300, "hostPort": 3000, "listenAddress": "127.0.0.1", "protocol": "TCP"},
        {"containerPort": 30090, "hostPort": 9090, "listenAddress": "127.0.0.1", "protocol": "TCP"},
    ]
    assert all("extraPortMappings" not in node for node in config["nodes"][1:])
    assert all("image" not in node for node in config["nodes"])


@pytest.mark.parametrize("workers", [1, 4])
def test_worker_count_name_ports_and_image_follow_the_variables(tmp_path: Path, workers: int) -> None:
    config = render_config(
        tmp_path,
        cluster_name="bench",
        cluster_workers=workers,
        grafana_node_port=31000,
        grafana_host_port=8300,
        prometheus_node_port=31090,
        prometheus_host_port=8390,
        kind_cluster_node_image="kindest/node:v1.34.0",
    )
    assert config["name"] == "bench"
    assert [node["role"] for node in config["nodes"]] == ["control-plane"] + ["worker"] * workers
    mapping = config["nodes"][0]["extraPortMappings"][0]
    assert (mapping["containerPort"], mapping["hostPort"]) == (31000, 8300)
    prometheus = config["nodes"][0]["extraPortMappings"][1]
    assert (prometheus["containerPort"], prometheus["hostPort"]) == (31090, 8390)
    assert {node["image"] for node in config["nodes"]} == {"kindest/node:v1.34.0"}


def real_kind() -> str | None:
    """The kind binary `make tools` or the system provides, when no Docker engine answers.

    With an engine, `kind create cluster` would really create a cluster: that is
    the molecule scenario's job, not a unit test's.
    """
    kind = tools_bin() / "kind"
    binary = str(kind) if kind.is_file() else shutil.which("kind")
    docker = shutil.which("docker")
    if binary is None:
        return None
    if docker and subprocess.run([docker, "info"], capture_output=True, check=False).returncode == 0:
        return None
    return binary


def kind_decode_error(kind: str, config: Path, tmp_path: Path) -> str | None:
    """kind's own strict decoding of a config: its error, or None when kind got past it.

    kind decodes --config (unknown fields and bad enum values fail) before it
    asks Docker anything; without Docker the run then stops at `docker info`.
    """
    proc = subprocess.run(
        [
            kind,
            "create",
            "cluster",
            "--config",
            str(config),
            "--name",
            "decode-only",
            "--kubeconfig",
            str(tmp_path / "unused-kubeconfig"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode != 0, "a kind cluster was created: this test must not run with a Docker engine"
    if "unable to decode config" in proc.stderr:
        return proc.stderr
    assert "docker" in proc.stderr.lower(), proc.stderr
    return None


@pytest.mark.skipif(real_kind() is None, reason="needs the kind binary and no Docker engine (see real_kind)")
def test_kind_itself_decodes_the_rendered_config(tmp_path: Path) -> None:
    kind = real_kind()
    assert kind is not None
    render_config(tmp_path, cluster_workers=3, kind_cluster_node_image="kindest/node:v1.34.0")
    assert kind_decode_error(kind, tmp_path / "out" / "kind-cluster-kind.yaml", tmp_path) is None
    # The same check rejects a config kind does not understand.
    broken = tmp_path / "broken.yaml"
    config = yaml.safe_load((tmp_path / "out" / "kind-cluster-kind.yaml").read_text())
    config["nodes"][0]["extraPortMappings"][0]["protocol"] = "TCPX"
    broken.write_text(yaml.safe_dump(config))
    assert "PortMappingProtocol" in (kind_decode_error(kind, broken, tmp_path) or "")


# --- the create / reuse / delete flow, with the stand-in kind ----------------


def role_play(tasks_from: str = "main") -> list[dict[str, Any]]:
    return playbook_json.role_play(
        "kind_cluster",
        tasks_from,
        {
            "name": "Show kind_cluster_exists",
            "ansible.builtin.debug": {"msg": "exists={{ kind_cluster_exists | default('unset') }}"},
        },
    )


@pytest.fixture
def stub_env(tmp_path: Path) -> dict[str, Any]:
    state = tmp_path / "kind-state"
    return {
        "state": state,
        "kubeconfig": tmp_path / "kube" / "config",
        "vars": {
            "kind_cluster_kind_bin": str(STUB_KIND),
            # The stand-in has no API server to ask (test_kind_cluster_reuse_kwok.py checks one).
            "kind_cluster_check_reuse": False,
            "kind_cluster_config_dir": str(tmp_path / "config"),
            "kind_cluster_kubeconfig": str(tmp_path / "kube" / "config"),
            # The role checks that the ports it publishes are free: not 3000 and 9090,
            # which a real cluster on this host may hold.
            "kind_cluster_grafana_host_port": free_port(),
            "kind_cluster_prometheus_host_port": free_port(),
        },
        "env": {"STUB_KIND_STATE": str(state)},
    }


def kind_calls(state: Path) -> list[list[str]]:
    log = state / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_creates_once_then_reuses_with_nothing_changed(tmp_path: Path, stub_env: dict[str, Any]) -> None:
    first = run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"])
    assert first.returncode == 0, first.report
    creates = [c for c in kind_calls(stub_env["state"]) if c[:2] == ["create", "cluster"]]
    assert len(creates) == 1
    assert creates[0][creates[0].index("--name") + 1] == "cluster-kind"
    assert creates[0][creates[0].index("--kubeconfig") + 1] == str(stub_env["kubeconfig"])
    assert "exists=True" in first.messages()
    contexts = yaml.safe_load(stub_env["kubeconfig"].read_text())["contexts"]
    assert [c["name"] for c in contexts] == ["kind-cluster-kind"]

    second = run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"])
    assert second.returncode == 0, second.report
    assert second.stats["changed"] == 0
    assert len([c for c in kind_calls(stub_env["state"]) if c[:2] == ["create", "cluster"]]) == 1


def test_reuse_exports_a_lost_context_back_into_the_kubeconfig(tmp_path: Path, stub_env: dict[str, Any]) -> None:
    assert run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"]).returncode == 0
    stub_env["kubeconfig"].unlink()

    again = run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"])
    assert again.returncode == 0, again.report
    assert [c[:2] for c in kind_calls(stub_env["state"])].count(["export", "kubeconfig"]) == 1
    assert [c[:2] for c in kind_calls(stub_env["state"])].count(["create", "cluster"]) == 1
    assert "kind-cluster-kind" in [c["name"] for c in yaml.safe_load(stub_env["kubeconfig"].read_text())["contexts"]]


def test_a_changed_shape_is_reported_not_applied_to_the_existing_cluster(
    tmp_path: Path, stub_env: dict[str, Any]
) -> None:
    assert run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"]).returncode == 0
    reshaped = run_playbook(tmp_path, role_play(), {**stub_env["vars"], "cluster_workers": 3}, env=stub_env["env"])
    assert reshaped.returncode == 0, reshaped.report
    assert [c[:2] for c in kind_calls(stub_env["state"])].count(["create", "cluster"]) == 1
    assert any("kind cannot reshape a running cluster" in m for m in reshaped.messages())


def test_check_mode_creates_nothing_and_stops_before_stages_that_need_the_cluster(
    tmp_path: Path, stub_env: dict[str, Any]
) -> None:
    run = run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"], check=True)
    assert run.returncode == 0, run.report
    assert [c[:2] for c in kind_calls(stub_env["state"])] == [["get", "clusters"]]
    assert not (tmp_path / "config").exists()
    assert not stub_env["kubeconfig"].exists()
    node_image, message = run.messages()
    assert node_image.startswith("kind_cluster: node image kind's default (kindest/node, pulled from the registry)")
    assert message.startswith("Would create the kind cluster cluster-kind (control plane and 2 worker(s)")
    assert run.results("Show kind_cluster_exists") == []  # end_host: nothing after the role ran


def test_check_mode_on_an_existing_cluster_changes_nothing(tmp_path: Path, stub_env: dict[str, Any]) -> None:
    assert run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"]).returncode == 0
    run = run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"], check=True)
    assert run.returncode == 0, run.report
    assert run.stats["changed"] == 0
    assert "exists=True" in run.messages()


def test_delete_removes_the_cluster_once(tmp_path: Path, stub_env: dict[str, Any]) -> None:
    assert run_playbook(tmp_path, role_play(), stub_env["vars"], env=stub_env["env"]).returncode == 0
    deleted = run_playbook(tmp_path, role_play("delete"), stub_env["vars"], env=stub_env["env"])
    assert deleted.returncode == 0, deleted.report
    assert deleted.stats["changed"] == 1
    again = run_playbook(tmp_path, role_play("delete"), stub_env["vars"], env=stub_env["env"])
    assert again.stats["changed"] == 0
    assert [c[:2] for c in kind_calls(stub_env["state"])].count(["delete", "cluster"]) == 1


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"cluster_name": "Bad_Name"}, "cluster_name"),
        ({"cluster_workers": 0}, "cluster_workers"),
        ({"grafana_node_port": 3000}, "kind_cluster_grafana_node_port"),
        ({"prometheus_node_port": 30300}, "kind_cluster_prometheus_node_port"),
        ({"kind_cluster_prometheus_host_port": "{{ kind_cluster_grafana_host_port }}"},
         "kind_cluster_prometheus_host_port"),
    ],
)
def test_bad_inputs_fail_before_kind_runs(
    tmp_path: Path, stub_env: dict[str, Any], bad: dict[str, Any], named: str
) -> None:
    run = run_playbook(tmp_path, role_play(), {**stub_env["vars"], **bad}, env=stub_env["env"])
    assert run.returncode != 0
    assert named in json.dumps(run.report)
    assert kind_calls(stub_env["state"]) == []


def test_a_taken_host_port_fails_before_kind_runs_and_names_the_variable(
    tmp_path: Path, stub_env: dict[str, Any]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = run_playbook(tmp_path, role_play(), {**stub_env["vars"], "kind_cluster_prometheus_host_port": port},
                           env=stub_env["env"])
    assert run.returncode != 0
    failure = run.failures()
    assert f"127.0.0.1:{port} is already in use" in failure and "kind_cluster_prometheus_host_port" in failure
    assert [c[:2] for c in kind_calls(stub_env["state"])] == [["get", "clusters"]]

"""kind_cluster: isolated workers, each kubelet confined to its own slice of the host's CPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support import playbook_json
from tests.support.playbook_json import run_playbook


def render(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    out = tmp_path / "out"
    tmp_path.mkdir(parents=True, exist_ok=True)
    play = playbook_json.role_play("kind_cluster", "config")
    run = run_playbook(tmp_path, play, {"kind_cluster_config_dir": str(out), **extra})
    assert run.returncode == 0, run.report
    return yaml.safe_load((out / "kind-cluster-kind.yaml").read_text())


def kubelet_args(node: dict[str, Any]) -> dict[str, str]:
    (patch,) = node["kubeadmConfigPatches"]
    document = yaml.safe_load(patch)
    assert document["kind"] == "JoinConfiguration"
    return document["nodeRegistration"]["kubeletExtraArgs"]


def test_each_worker_reserves_every_cpu_outside_its_own_slice(tmp_path: Path) -> None:
    config = render(tmp_path, kind_cluster_host_cpus="0-3")
    control_plane, *workers = config["nodes"]
    assert "kubeadmConfigPatches" not in control_plane
    strict = {"cpu-manager-policy": "static", "cpu-manager-policy-options": "strict-cpu-reservation=true"}
    assert [kubelet_args(w) for w in workers] == [
        {**strict, "reserved-cpus": "2-3"},
        {**strict, "reserved-cpus": "0-1"},
    ]


def test_isolation_is_off_when_switched_off_or_when_cpus_are_fewer_than_workers(tmp_path: Path) -> None:
    off = render(tmp_path / "off", kind_cluster_host_cpus="0-3", kind_cluster_isolated_workers=False)
    few = render(tmp_path / "few", kind_cluster_host_cpus="0", cluster_workers=2)
    for config in (off, few):
        assert all("kubeadmConfigPatches" not in node for node in config["nodes"])


def test_by_default_the_slices_come_from_the_cpus_this_host_has_online(tmp_path: Path) -> None:
    config = render(tmp_path)
    online = Path("/sys/devices/system/cpu/online").read_text().strip()
    count = sum(int(b) - int(a) + 1 if "-" in p else 1 for p in online.split(",") for a, _, b in [p.partition("-")])
    workers = config["nodes"][1:]
    assert all(("kubeadmConfigPatches" in w) == (count >= 2) for w in workers)

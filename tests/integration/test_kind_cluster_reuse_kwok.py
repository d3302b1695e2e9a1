"""kind_cluster reuses an existing cluster only when it works: its API server answers, all its nodes are Ready.

`kind` is the stand-in of tests/support/stubs (no Docker engine needed); the
API server it hands out with `kind get kubeconfig` is a real one, kwok's, with
two Ready nodes. So a cluster shaped for three nodes is "half made" (a node
missing), one shaped for two works, one whose kubeconfig kind cannot give or
whose API server does not answer is broken.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import kwok, playbook_json
from tests.support.k8s_objects import make_node
from tests.support.playbook_json import PlaybookRun, role_play, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]

STUB_KIND = Path(playbook_json.__file__).parent / "stubs" / "kind"
NAME = "reuse-test"


@pytest.fixture(scope="module")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kwok.KwokCluster]:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    cluster = kwok.KwokCluster(name=f"reuse-{worker}-{kwok.free_port()}", workdir=tmp_path_factory.mktemp("reuse"))
    cluster.create()
    try:
        kwok.create_nodes(cluster.api(), [make_node(f"{NAME}-control-plane"), make_node(f"{NAME}-worker")])
        yield cluster
    finally:
        cluster.delete()


def existing_cluster(tmp_path: Path, kubeconfig: dict[str, Any] | None) -> Path:
    """A cluster the stand-in lists (kind get clusters), handing out `kubeconfig` (None: it cannot)."""
    state = tmp_path / "kind-state"
    (state / "clusters").mkdir(parents=True)
    (state / "clusters" / NAME).write_text(json.dumps({"nodes": [f"{NAME}-control-plane", f"{NAME}-worker"]}))
    if kubeconfig is not None:
        (state / "clusters" / f"{NAME}.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    return state


def run_role(tmp_path: Path, state: Path, workers: int, **extra: Any) -> PlaybookRun:
    variables = {
        "cluster_name": NAME,
        "cluster_workers": workers,
        "kind_cluster_kind_bin": str(STUB_KIND),
        "kind_cluster_node_image": "kindest/node:v1.34.0",
        "kind_cluster_isolated_workers": False,
        "kind_cluster_config_dir": str(tmp_path / "config"),
        "kind_cluster_kubeconfig": str(tmp_path / "kube" / "config"),
        **extra,
    }
    return run_playbook(tmp_path, role_play("kind_cluster"), variables, env={"STUB_KIND_STATE": str(state)})


def kind_calls(state: Path) -> list[list[str]]:
    return [json.loads(line)[:2] for line in (state / "calls.jsonl").read_text().splitlines()]


def failure(run: PlaybookRun) -> str:
    [failed] = [r for r in run.results("Stop at a cluster that does not work") if r.get("failed")]
    return str(failed["msg"])


def kwok_kubeconfig(cluster: kwok.KwokCluster) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(cluster.kubeconfig.read_text())
    return config


def test_a_cluster_whose_nodes_are_all_ready_is_reused(tmp_path: Path, api_server: kwok.KwokCluster) -> None:
    state = existing_cluster(tmp_path, kwok_kubeconfig(api_server))
    run = run_role(tmp_path, state, workers=1)
    assert run.returncode == 0, json.dumps(run.report)[-3000:]
    assert ["create", "cluster"] not in kind_calls(state)


def test_a_cluster_missing_a_node_fails_naming_the_teardown(tmp_path: Path, api_server: kwok.KwokCluster) -> None:
    state = existing_cluster(tmp_path, kwok_kubeconfig(api_server))
    run = run_role(tmp_path, state, workers=2)
    assert run.returncode != 0
    message = failure(run)
    assert message.startswith(f"The kind cluster {NAME} exists but does not work: it has 2 node(s), 2 Ready, "
                              "where its shape has 3.")
    assert "`ansible-playbook playbooks/teardown.yml`" in message and "kind_cluster_recreate_broken=true" in message
    assert ["create", "cluster"] not in kind_calls(state)
    assert ["delete", "cluster"] not in kind_calls(state)


def test_a_cluster_kind_cannot_give_a_kubeconfig_for_fails(tmp_path: Path, api_server: kwok.KwokCluster) -> None:
    state = existing_cluster(tmp_path, None)
    message = failure(run_role(tmp_path, state, workers=1))
    assert "kind cannot give its kubeconfig: ERROR: could not locate any control plane nodes" in message


def test_a_cluster_whose_api_server_does_not_answer_fails(tmp_path: Path, api_server: kwok.KwokCluster) -> None:
    config = kwok_kubeconfig(api_server)
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{kwok.free_port()}"
    state = existing_cluster(tmp_path, config)
    message = failure(run_role(tmp_path, state, workers=1))
    assert "its API server does not answer" in message


def test_recreate_broken_deletes_and_creates_it_again(tmp_path: Path, api_server: kwok.KwokCluster) -> None:
    state = existing_cluster(tmp_path, kwok_kubeconfig(api_server))
    run = run_role(tmp_path, state, workers=2, kind_cluster_recreate_broken=True)
    assert run.returncode == 0, json.dumps(run.report)[-3000:]
    calls = kind_calls(state)
    assert calls.index(["delete", "cluster"]) < calls.index(["create", "cluster"])
    assert any("creating it again (kind_cluster_recreate_broken): it has 2 node(s)" in m for m in run.messages())

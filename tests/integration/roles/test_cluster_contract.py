"""cluster_provider: the cluster contract, the one mapping every later role reads, through ansible-playbook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import playbook_json
from tests.support.cluster_contract import CAPABILITIES
from tests.support.playbook_json import run_playbook
from tests.support.tools import tools_bin


def contract(tmp_path: Path, provider: str, **extra: object) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "eks-prod"}))
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "cluster_provider", "main", {"ansible.builtin.debug": {"msg": "{{ cluster | to_json }}"}}
        ),
        {"cluster_provider": provider, "cluster_name": "struct-contract", "image_source": "registry",
         "cluster_provider_existing_kubeconfig": str(kubeconfig), "cluster_provider_kwok_workdir": str(tmp_path),
         **extra},
    )
    assert run.returncode == 0, run.report
    return dict(json.loads(run.messages()[-1]))


@pytest.mark.parametrize(("provider", "with_registry"), sorted(CAPABILITIES))
def test_the_contract_says_what_the_cluster_can_do(tmp_path: Path, provider: str, with_registry: bool) -> None:
    registry = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/x" if with_registry else ""
    cluster = contract(tmp_path, provider, images_registry=registry)
    assert set(cluster) == {"provider", "kubeconfig", "context", "runs_containers", "image_delivery", "created_here",
                            "tools_path"}
    assert cluster["provider"] == provider
    # The table role tests start from (tests/support/cluster_contract.py) is what the role gives.
    assert {key: cluster[key] for key in CAPABILITIES[(provider, with_registry)]} == CAPABILITIES[
        (provider, with_registry)
    ]
    # The built tools come first on that PATH: the folder `make tools` fills (tests/support/tools.py).
    assert Path(cluster["tools_path"].split(":")[0]).expanduser() == tools_bin()


def test_the_connection_is_the_one_the_provider_chose(tmp_path: Path) -> None:
    kwok = contract(tmp_path, "kwok")
    assert kwok["kubeconfig"] == str(tmp_path / "clusters" / "struct-contract" / "kubeconfig.yaml")
    assert kwok["context"] == "kwok-struct-contract"
    existing = contract(tmp_path, "existing")
    assert (existing["kubeconfig"], existing["context"]) == (str(tmp_path / "kubeconfig"), "eks-prod")

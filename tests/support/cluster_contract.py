"""The cluster contract as a role under test receives it from cluster_provider (docs/architecture.md).

`CAPABILITIES` is what cluster_provider says each provider can do, with and
without images_registry; tests/integration/roles/test_cluster_contract.py
checks the role sets exactly these, so a role test that starts from this
table starts from what the role really gives.
"""

from __future__ import annotations

from typing import Any

# (provider, images_registry set) -> what the cluster can do.
CAPABILITIES: dict[tuple[str, bool], dict[str, Any]] = {
    ("kind", False): {"runs_containers": True, "image_delivery": "load", "created_here": True},
    ("kind", True): {"runs_containers": True, "image_delivery": "push", "created_here": True},
    ("kwok", False): {"runs_containers": False, "image_delivery": "none", "created_here": True},
    ("kwok", True): {"runs_containers": False, "image_delivery": "none", "created_here": True},
    ("existing", False): {"runs_containers": True, "image_delivery": "none", "created_here": False},
    ("existing", True): {"runs_containers": True, "image_delivery": "push", "created_here": False},
}


def cluster_vars(provider: str, registry: str = "", kubeconfig: str = "", context: str = "") -> dict[str, Any]:
    """Extra vars for a role run as site.yml runs it after cluster_provider: the provider and the contract."""
    return {
        "cluster_provider_resolved": provider,
        "cluster": {
            "provider": provider, "kubeconfig": kubeconfig, "context": context, "tools_path": "",
            **CAPABILITIES[(provider, bool(registry))],
        },
    }

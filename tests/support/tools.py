"""Where the tools `make tools` builds live: the one definition the tests, benchmarks and molecule read.

INTERFERENCE_TOOLS_BIN when set (CI and the Makefile set it), else the per-user
cache ~/.cache/interference-orchestrator/bin, the same default the roles use
(cluster_provider's `interference_tools_bin`) and scripts/build-tools.sh fills.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_TOOLS_BIN = Path("~/.cache/interference-orchestrator/bin")


def tools_bin() -> Path:
    """The folder of kube-apiserver, kwokctl, kind, gpu-scheduler and the other built tools."""
    configured = os.environ.get("INTERFERENCE_TOOLS_BIN", "")
    return Path(configured or DEFAULT_TOOLS_BIN).expanduser()

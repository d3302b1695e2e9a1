"""Which Ansible strategy the integration tier's ansible-playbook runs use.

Mitogen's `mitogen_linear` runs the linear strategy's order and semantics with
each module in a Python interpreter kept warm across a run's tasks, instead of
one interpreter started (and AnsiballZ's payload unpacked and compiled) per
task. Measured side by side on 2026-12-05 (docs/ci.md, "Mitogen"):

- a `site.yml` rerun on kwok (2 workers, 4 apps, 76 tasks ok): 14.0 s against
  25.3 s with Ansible's linear strategy; the whole `benchmarks/site_kwok.py site`
  run's ansible-playbook processes: 89 s of CPU against 140 s;
- a one-task playbook: about 2.0 s of CPU against 1.3 s (the warm interpreter
  costs about a second to start).

So the modules that drive a cluster, whose site.yml runs have dozens of module
tasks, get Mitogen, and the modules that render one role on localhost (a few
tasks per run) keep Ansible's own (tests/integration/conftest.py,
`ansible_strategy`). The tier is CPU-bound on two cores: that CPU is what it
waits for.

Ansible's own strategy is not left untested on a cluster: molecule's kwok and
kind scenarios (`make molecule`, `make kind-test`) run site.yml with it, as
users do, converge and idempotence included. INTERFERENCE_TEST_STRATEGY=linear
(or =mitogen_linear) runs every module of the tier one way.
"""

from __future__ import annotations

import os
from pathlib import Path

STRATEGY_VARIABLE = "INTERFERENCE_TEST_STRATEGY"
STRATEGIES = ("mitogen_linear", "linear")


def strategy_env(*, drives_a_cluster: bool, environ: dict[str, str] | None = None) -> dict[str, str]:
    """ANSIBLE_STRATEGY (and Mitogen's plugin folder) for the ansible-playbook runs of one test module."""
    environ = dict(os.environ) if environ is None else environ
    chosen = environ.get(STRATEGY_VARIABLE, "")
    if chosen and chosen not in STRATEGIES:
        raise ValueError(f"{STRATEGY_VARIABLE}={chosen!r}: expected one of {', '.join(STRATEGIES)}, or unset")
    strategy = chosen or ("mitogen_linear" if drives_a_cluster else "linear")
    if strategy == "linear":
        return {"ANSIBLE_STRATEGY": "linear"}
    import ansible_mitogen  # imported only where the strategy is used

    plugins = Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
    return {"ANSIBLE_STRATEGY_PLUGINS": str(plugins), "ANSIBLE_STRATEGY": strategy}

"""`kubectl auth can-i` as a ServiceAccount, for the RBAC checks of the kwok and kind tiers."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence


def can_i(kubectl: Sequence[str], account: str, verb: str, resource: str, namespace: str, *,
          account_namespace: str = "kube-system", env: Mapping[str, str] | None = None) -> bool:
    """Whether `account` (a ServiceAccount of `account_namespace`) may `verb` `resource` in `namespace`.

    `kubectl` is the command and its connection flags (`kubectl --kubeconfig F` or
    `kubectl --context C`), run with `env` (default: this process's). `pods/binding`
    names the subresource, `leases/x` one object.
    """
    what = ["pods", "--subresource=binding"] if resource == "pods/binding" else [resource]
    proc = subprocess.run(
        [*kubectl, "auth", "can-i", verb, *what, "-n", namespace,
         f"--as=system:serviceaccount:{account_namespace}:{account}"],
        capture_output=True, text=True, check=False, env=None if env is None else dict(env),
    )
    answer = proc.stdout.strip()
    assert answer in ("yes", "no"), proc.stdout + proc.stderr
    return answer == "yes"

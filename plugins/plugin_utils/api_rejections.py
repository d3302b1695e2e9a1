"""Which apps the API server refused in a dry run, and why, in the words of the app list.

Input is the registered result of a `kubernetes.core.k8s` task run with
`continue_on_error` on a list of Deployments (one per app): one verdict per
Deployment, in the order of the list, each refused one carrying the server's
`Status` object in its error message. kubernetes.core returns a single
definition's verdict at the top level instead of in `result.results`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def server_status(message: str) -> dict[str, Any] | None:
    """The Kubernetes `Status` object embedded in a kubernetes.core error message, or None when there is none."""
    start = message.find("{")
    if start < 0:
        return None
    try:
        status, _ = json.JSONDecoder().raw_decode(message[start:])
    except ValueError:
        return None
    return status if isinstance(status, dict) and status.get("kind") == "Status" else None


def _reasons(error: Mapping[str, Any]) -> str:
    """The server's reasons, one `field 'path': problem` per cause; its message, or the raw error, otherwise."""
    raw = str(error.get("msg", "")).strip()
    status = server_status(raw)
    if status is None:
        return raw or "refused without a message"
    causes = (status.get("details") or {}).get("causes") or []
    described = [
        f"field '{cause['field']}': {cause.get('message', '')}" if cause.get("field") else str(cause.get("message", ""))
        for cause in causes
        if isinstance(cause, Mapping)
    ]
    return "; ".join(described) if described else str(status.get("message", raw))


def _verdicts(dry_run: Mapping[str, Any], count: int) -> list[Mapping[str, Any]]:
    if count == 1:
        return [dry_run]
    results = (dry_run.get("result") or {}).get("results") or []
    return [verdict for verdict in results if isinstance(verdict, Mapping)]


def api_rejections(
    dry_run: Mapping[str, Any], manifests: Sequence[Mapping[str, Any]], listed: Iterable[str]
) -> list[str]:
    """One sentence per refused Deployment, naming its app as the app list does: `apps[<index>] (<name>)`.

    `listed` are the names in the app list, in order; an app not in it (kept
    running with apps_prune off) is named `unlisted app <name>`.
    """
    index_of = {name: index for index, name in enumerate(listed)}
    sentences = []
    for manifest, verdict in zip(manifests, _verdicts(dry_run, len(manifests)), strict=False):
        error = verdict.get("error")
        if not error:
            continue
        name = str((manifest.get("metadata") or {}).get("name", "?"))
        where = f"apps[{index_of[name]}] ({name})" if name in index_of else f"unlisted app {name}"
        sentences.append(f"{where}: refused by the API server: {_reasons(error)}.")
    return sentences

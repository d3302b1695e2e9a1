"""Reading Prometheus's HTTP API: bounded waits, queries, and the health of scrape targets.

Used by the kind verification and the isolation playbook (standard library
only, as Ansible's controller may not have more). Every failure names what
it waited for: the URL that did not answer, the query that failed, or the job
and node of a scrape target that is missing or down.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any


class PrometheusUnavailable(RuntimeError):
    """Prometheus did not answer at a URL within the time allowed."""


class PrometheusQueryError(RuntimeError):
    """Prometheus answered a query with an error."""


def _data(body: Any, what: str) -> Any:
    if not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error", body) if isinstance(body, dict) else body
        raise PrometheusQueryError(f"Prometheus refused {what}: {error}")
    return body["data"]


def get_json(url: str, timeout: float = 10.0) -> Any:
    """GET a Prometheus API URL; return its JSON body."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def wait_ready(base_url: str, within_s: float, pause_s: float = 2.0) -> None:
    """Wait until `base_url`/-/ready answers 200, at most within_s seconds; else raise naming the URL."""
    url = f"{base_url}/-/ready"
    deadline = time.monotonic() + within_s
    last = "no attempt"
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            last = str(error)
        if time.monotonic() >= deadline:
            raise PrometheusUnavailable(f"Prometheus did not answer at {url} within {within_s:.0f} s (last: {last})")
        time.sleep(pause_s)


def query(base_url: str, promql: str) -> list[dict[str, Any]]:
    """Instant query; return data.result (a vector: [{'metric': {...}, 'value': [t, 'v']}])."""
    body = get_json(f"{base_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    result: list[dict[str, Any]] = _data(body, f"query {promql!r}")["result"]
    return result


def query_range(base_url: str, promql: str, start: float, end: float, step_s: float) -> list[dict[str, Any]]:
    """Range query; return data.result (a matrix: [{'metric': {...}, 'values': [[t, 'v'], ...]}])."""
    params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
    body = get_json(f"{base_url}/api/v1/query_range?" + urllib.parse.urlencode(params))
    result: list[dict[str, Any]] = _data(body, f"range query {promql!r}")["result"]
    return result


def active_targets(base_url: str) -> list[dict[str, Any]]:
    """The active scrape targets (/api/v1/targets)."""
    body = get_json(f"{base_url}/api/v1/targets?state=active")
    targets: list[dict[str, Any]] = _data(body, "the list of targets")["activeTargets"]
    return targets


def target_problems(targets: Iterable[Mapping[str, Any]], expected: Mapping[str, Iterable[str]]) -> list[str]:
    """What is wrong with the scrape targets, one line per job and node; empty when all is well.

    `expected` maps a job to the nodes it must have an up target on; a target's
    node is its `node` label (both stacks relabel it so). A missing target, and
    one whose health is not "up", are problems; jobs not in `expected` are ignored.
    """
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for target in targets:
        labels = target.get("labels", {})
        found[(labels.get("job", ""), labels.get("node", ""))] = target
    problems = []
    for job, nodes in expected.items():
        for node in sorted(nodes):
            seen = found.get((job, node))
            if seen is None:
                problems.append(f"job {job}: no scrape target on node {node}")
            elif seen.get("health") != "up":
                problems.append(
                    f"job {job}: target on node {node} is {seen.get('health')}"
                    f" ({seen.get('lastError') or 'no error given'}, {seen.get('scrapeUrl', '')})"
                )
    return problems

"""Prometheus reading: a target check naming the job and node of what is wrong, errors naming the URL or query."""

from __future__ import annotations

import pytest
from ansible_collections.interference.orchestrator.plugins.plugin_utils import prometheus
from ansible_collections.interference.orchestrator.plugins.plugin_utils.prometheus import (
    PrometheusQueryError,
    PrometheusUnavailable,
    target_problems,
    wait_ready,
)


def target(job: str, node: str, health: str = "up", error: str = "") -> dict[str, object]:
    return {"labels": {"job": job, "node": node}, "health": health, "lastError": error, "scrapeUrl": f"http://{node}"}


EXPECTED = {"kubernetes-cadvisor": ["cp", "w1", "w2"], "interference-probe": ["w1", "w2"]}


def test_all_up_is_no_problem() -> None:
    targets = [target("kubernetes-cadvisor", n) for n in ("cp", "w1", "w2")] + [
        target("interference-probe", n) for n in ("w1", "w2")
    ]
    assert target_problems([*targets, target("other", "x", "down")], EXPECTED) == []


def test_a_down_target_is_named_by_job_and_node() -> None:
    targets = [target("kubernetes-cadvisor", n) for n in ("cp", "w1", "w2")] + [
        target("interference-probe", "w1"),
        target("interference-probe", "w2", "down", "connection refused"),
    ]
    assert target_problems(targets, EXPECTED) == [
        "job interference-probe: target on node w2 is down (connection refused, http://w2)"
    ]


def test_a_missing_target_is_named_by_job_and_node() -> None:
    targets = [target("kubernetes-cadvisor", n) for n in ("cp", "w2")]
    assert target_problems(targets, EXPECTED) == [
        "job kubernetes-cadvisor: no scrape target on node w1",
        "job interference-probe: no scrape target on node w1",
        "job interference-probe: no scrape target on node w2",
    ]


def test_a_refused_query_names_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    monkeypatch.setattr(prometheus, "get_json", lambda url, timeout=10.0: body)
    with pytest.raises(PrometheusQueryError, match=r"query 'up\{': parse error at char 3"):
        prometheus.query("http://p:9090", "up{")


def test_wait_ready_names_the_url_when_nothing_answers() -> None:
    # Port 9 (discard) on localhost: nothing listens in a test environment.
    with pytest.raises(PrometheusUnavailable, match=r"http://127\.0\.0\.1:9/-/ready within 0 s"):
        wait_ready("http://127.0.0.1:9", within_s=0, pause_s=0)

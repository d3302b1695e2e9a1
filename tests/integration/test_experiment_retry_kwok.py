"""experiment role: a round whose run failed runs again, and results.json keeps both attempts.

On the project's CI host a kind run once failed one Job of the experiment with
an empty log and no reason but "FailureTarget, Failed" (CI of 77c880b). A round now
runs again when one of its runs fails (experiment_round_attempts), and a
failed run names the Job's reasons and what its pod said of its end.

Shown on a real API server and Job controller (kwokctl, local binaries): kwok
plays the pods but runs no container, and its pod-complete stage ends each
Job's pod Succeeded with an empty log, so every run lacks its RESULT line and
fails, on every attempt. The kind tier (test_experiment_kind.py) runs the
workloads for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client

from tests.support import kwok
from tests.support.k8s_objects import make_node
from tests.support.playbook_json import VENV_BIN, run_playbook

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(bool(kwok.missing_tools()), reason=f"run `make tools` first: {kwok.missing_tools()} missing"),
]


def test_a_failed_run_runs_its_round_again_and_both_attempts_are_recorded_with_the_reason(tmp_path: Path) -> None:
    cluster = kwok.KwokCluster(name=f"retry-{kwok.free_port()}", workdir=tmp_path / "kwok")
    cluster.create()
    try:
        kwok.create_nodes(cluster.api(), [make_node("w1", labels={"group": "node1"})])
        plays = [{
            "hosts": "localhost",
            "gather_facts": False,
            "module_defaults": {"group/kubernetes.core.k8s": {
                "kubeconfig": str(cluster.kubeconfig), "context": f"kwok-{cluster.name}"}},
            "tasks": [{"ansible.builtin.include_role": {"name": "interference.orchestrator.experiment"}}],
        }]
        out = tmp_path / "experiments"
        variables = {
            "experiment_apps": [{"name": "mbw", "image": "pts/mbw", "type": "memory"}],
            "experiment_policies": ["baseline"], "experiment_repeats": 1, "experiment_round_attempts": 2,
            "experiment_job_timeout": 120, "experiment_start_delay": 0, "experiment_poll_interval": 1,
            "experiment_image_check": "none", "experiment_output_root": str(out),
            "experiment_python": str(VENV_BIN / "python"),
        }
        outcome = run_playbook(tmp_path, plays, variables)
        assert outcome.returncode == 0, outcome.failures()
        (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
        runs = json.loads((run_dir / "results.json").read_text())["runs"]
        # The first attempt failed and was superseded; the second, the last allowed, failed and counts.
        assert [(r["attempt"], r["status"], r["superseded"]) for r in runs] == [
            (1, "failed", True), (2, "failed", False)]
        for record in runs:
            assert record["job"] == "exp-r0-mbw" and record["planned_node"] == "w1"
            # Why, with what the pod said of its end: it ran to completion, and printed nothing.
            assert record["error"].startswith("no RESULT line in the log [pod exp-r0-mbw-"), record["error"]
            assert record["error"].endswith(" on w1, Succeeded; container terminated Completed, exit code 0]"), record
            assert record["termination"]["phase"] == "Succeeded"
        said = [m for m in outcome.messages() if "The round runs again" in m]
        assert len(said) == 1 and "attempt 1 of 2: no RESULT line in the log" in said[0], said
        text = (run_dir / "report.md").read_text()
        assert "runs: 1 (1 failed),\n  and 1 superseded" in text
        assert "- round 0 (baseline, repeat 0), attempt 1, mbw: no RESULT line in the log" in text
        # Every Job of the run is gone at the end, as before.
        batch = client.BatchV1Api(cluster.api().api_client)
        assert batch.list_namespaced_job("interference-experiment").items == []
    finally:
        cluster.delete()

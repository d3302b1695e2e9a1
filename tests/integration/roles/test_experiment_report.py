"""experiment role: report.md, the plot and the summary are derived from results.json alone.

The Jobs need a cluster (tests/integration/test_experiment_kind.py); here a
results.json written by hand goes through the role's report step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import playbook_json
from tests.support.playbook_json import VENV_BIN, run_playbook

APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
]
ROUNDS: dict[tuple[str, int, str], int] = {}


def run(policy: str, app: str, value: float | None, repeat: int = 0, pair: list[str] | None = None) -> dict[str, Any]:
    better = "lower" if app == "c-ray" else "higher"
    ok = value is not None
    # As the experiment numbers them: a round per app alone, per pair, per policy and repeat.
    together = app if policy == "baseline" else "+".join(pair or [])
    return {
        "round": ROUNDS.setdefault((policy, repeat, together), len(ROUNDS)), "policy": policy, "repeat": repeat,
        "app": app, "pair": pair, "job": f"exp-r0-{app}",
        "planned_node": "w1", "node": "w1", "start_at": 0, "status": "succeeded" if ok else "failed",
        "result": {"value": value, "better": better, "unit": "s", "wall_seconds": 1.0} if ok else None,
        "error": None if ok else "Job exp-r0-mbw did not complete: Failed", "log": "RESULT ..." if ok else "Killed",
    }


def results(runs: list[dict[str, Any]], policies: list[str]) -> dict[str, Any]:
    return {
        "schema": 1, "started": "2026-11-30T10:00:00Z",
        "cluster": {"provider": "kind", "context": "kind-x", "nodes": [{"name": "w1", "allocatable": {"cpu": "1"}}]},
        "host": {"cpus_online": "0-1\n", "loadavg_before": "3.1 2.0 1.0 1/2 3", "loadavg_now": "3.5 2.1 1.1 1/2 3"},
        "config": {"policies": policies, "repeats": 2, "scale": 1, "start_delay": 10, "job_timeout": 600},
        "apps": APPS, "images": {}, "plans": {p: {"c-ray": "w1", "mbw": "w1"} for p in policies}, "runs": runs,
    }


def report(tmp_path: Path, content: dict[str, Any]) -> tuple[Any, Path]:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps(content))
    outcome = run_playbook(
        tmp_path,
        playbook_json.role_play("experiment", "report"),
        {"experiment_run_dir": str(run_dir), "experiment_python": str(VENV_BIN / "python")},
    )
    return outcome, run_dir


def test_report_and_plot_come_from_results_json_and_failed_runs_are_counted_not_timed(tmp_path: Path) -> None:
    runs = [
        run("baseline", "c-ray", 2.0), run("baseline", "mbw", 1000.0),
        run("worst", "c-ray", 4.0), run("worst", "c-ray", 3.0, repeat=1),
        run("worst", "mbw", 500.0), run("worst", "mbw", None, repeat=1),
    ]
    outcome, run_dir = report(tmp_path, results(runs, ["baseline", "worst"]))
    assert outcome.returncode == 0, outcome.report
    text = (run_dir / "report.md").read_text()
    assert "| worst | c-ray | 2 | 1.75 | 1.50-2.00 | 1.50 | 2.00 | 0 | 0.00 |" in text
    assert "| worst | mbw | 1 | 2.00 | 2.00-2.00 | 2.00 | 2.00 | 1 | 0.00 |" in text
    assert "did not complete: Failed" in text
    assert (run_dir / "slowdown.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_profiling_run_reports_pair_scores_and_the_fit_error(tmp_path: Path) -> None:
    runs = [
        run("baseline", "c-ray", 2.0), run("baseline", "mbw", 1000.0),
        run("pair", "c-ray", 4.0, pair=["c-ray", "mbw"]), run("pair", "mbw", 500.0, pair=["c-ray", "mbw"]),
    ]
    outcome, run_dir = report(tmp_path, results(runs, ["baseline", "pair"]))
    assert outcome.returncode == 0, outcome.report
    text = (run_dir / "report.md").read_text()
    assert "| c-ray+mbw | 1.000 |" in text
    assert "Fit error: RMSE" in text


def test_a_round_run_again_reports_only_its_last_attempt_and_lists_the_first(tmp_path: Path) -> None:
    oom = "Job exp-r0-mbw did not complete: Failed [pod exp-r0-mbw-x on w1, Failed; container terminated OOMKilled]"
    first = [{**run("worst", "c-ray", 40.0), "attempt": 1, "superseded": True},
             {**run("worst", "mbw", None), "attempt": 1, "superseded": True, "error": oom}]
    second = [{**run("worst", "c-ray", 4.0), "attempt": 2, "superseded": False},
              {**run("worst", "mbw", 500.0), "attempt": 2, "superseded": False}]
    runs = [run("baseline", "c-ray", 2.0), run("baseline", "mbw", 1000.0), *first, *second]
    outcome, run_dir = report(tmp_path, results(runs, ["baseline", "worst"]))
    assert outcome.returncode == 0, outcome.report
    text = (run_dir / "report.md").read_text()
    # The superseded attempt gives no figure (40.0 would be a slowdown of 20) and no failure.
    assert "| worst | c-ray | 1 | 2.00 | 2.00-2.00 | 2.00 | 2.00 | 0 | 0.00 |" in text
    assert "| worst | mbw | 1 | 2.00 | 2.00-2.00 | 2.00 | 2.00 | 0 | 0.00 |" in text
    assert "runs: 4 (0 failed),\n  and 2 superseded by a second attempt at their round (below)" in text
    assert "## Failed runs" not in text
    assert f"(worst, repeat 0), attempt 1, mbw: {oom}" in text.split("## Rounds run again")[1]

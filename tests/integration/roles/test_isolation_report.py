"""isolation: report.md and heatmap.png derived from a results.json alone, through ansible-playbook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.playbook_json import run_playbook


def series(node: str, resource: str, level: float, start: float) -> dict[str, Any]:
    return {"metric": {"node": node, "resource": resource},
            "values": [[start - 10 + 5 * i, str(level if i >= 2 else 0.0)] for i in range(9)]}


def results() -> dict[str, Any]:
    runs = []
    for stressor in ("cpu", "memory_bandwidth"):
        for stressed in ("w1", "w2"):
            levels = {(n, r): (0.85 if n == stressed and r == stressor else 0.05)
                      for n in ("w1", "w2") for r in ("cpu", "llc", "memory_bandwidth")}
            runs.append({"stressor": stressor, "node": stressed, "stressor_started": 100.0, "window": [110.0, 130.0],
                         "series": [series(n, r, v, 100.0) for (n, r), v in levels.items()]})
    return {"started": "2026-12-01T00:00:00Z", "prometheus_url": "http://localhost:9090",
            "query": "interference_probe_pressure", "nodes": ["w1", "w2"],
            "config": {"stress_s": 30, "warmup_s": 10, "step_s": 5, "rise_margin": 0.2}, "runs": runs}


def test_report_and_heatmap_come_from_results_json(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps(results()))
    include = {"name": "interference.orchestrator.isolation", "tasks_from": "report.yml"}
    run = run_playbook(tmp_path, [{"hosts": "localhost", "gather_facts": False,
                                   "tasks": [{"ansible.builtin.include_role": include}]}],
                       {"isolation_run_dir": str(run_dir)})
    assert run.returncode == 0, run.stderr
    report = (run_dir / "report.md").read_text()
    assert "## Stressor `cpu`: pressure of `cpu`" in report
    assert "| **w1** | 0.85 | 0.05 | 0.00 / - |" in report
    assert "| **w2** | 0.05 | 0.85 | 0.00 / - |" in report
    assert "## Stressor `memory_bandwidth`" in report
    # No baseline run: each worker's rise is its level; the other worker sees 0.05 of the stressed one's 0.85.
    assert "| cpu | 0.06 | 0.06 | 0.06 |" in report
    assert "| memory_bandwidth | 0.06 | 0.06 | 0.06 |" in report
    png = (run_dir / "heatmap.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000

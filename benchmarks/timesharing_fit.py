#!/usr/bin/env python3
"""The time-sharing model judged on the experiment runs this repo stores, against the pair score it extends.

Not a test, and no new measurement: it rederives, from each stored
results.json (docs/experiment/), the slowdown the model predicts for every run
(plugin_utils/experiment_model.predicted_scores, the engine's one formula in
module_utils/timesharing.py) under each variant below, and sets it beside the
slowdown measured for that run (experiment.summarize's own baselines and
slowdown). The variants:

- "pair score": the apps as recorded (no cpu_demand): today's score, 1 + the
  dot products with the run's neighbours on its node;
- "time-sharing": each app declares cpu_demand 1 (each benchmark keeps one
  core busy; the kind workers have 1 CPU each), nothing shared across workers;
- with a share across the workers of the one host (label kubernetes.io/os):
  cpu 0.14, the share the isolation run measured on this machine
  (docs/monitoring/isolation-kind-2026-12-01-quiet), and memory_bandwidth at
  0.3, 0.6 and 1, which no run here could measure (docs/engine.md).

For each: Spearman and Pearson of predicted against measured slowdown over
every run with both, the medians of both, and the mean absolute error of
the predicted slowdown (1 + score; a ratio in both variants, so comparable
with the measured one).

Raw rows go to benchmarks/results/timesharing_fit.json; the table is printed from them.
Usage: python benchmarks/timesharing_fit.py [--out benchmarks/results/timesharing_fit.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import (
    counted_runs,
    slowdown,
    summarize,
)
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment_model import (
    pearson,
    predicted_scores,
    spearman,
)

ROOT = Path(__file__).resolve().parent.parent
STORED = {
    "kind run (5 policies, 2 repeats)": ROOT / "docs" / "experiment" / "results.json",
    "profiling run (pairs, 1 repeat)": ROOT / "docs" / "experiment" / "profile-results.json",
}
RESULTS = Path(__file__).parent / "results" / "timesharing_fit.json"
HOST = "kubernetes.io/os"
VARIANTS: dict[str, dict[str, Any]] = {
    "pair score": {"demand": None, "sharing": None},
    "time-sharing": {"demand": "1", "sharing": None},
    "time-sharing, cpu share 0.14": {"demand": "1", "sharing": {"cpu": 0.14}},
    "time-sharing, memory share 0.3": {"demand": "1", "sharing": {"memory_bandwidth": 0.3}},
    "time-sharing, memory share 0.6": {"demand": "1", "sharing": {"memory_bandwidth": 0.6}},
    "time-sharing, memory share 1": {"demand": "1", "sharing": {"memory_bandwidth": 1.0}},
}


def variant_results(results: dict[str, Any], demand: str | None, shares: dict[str, float] | None) -> dict[str, Any]:
    """The stored results with the variant's apps and sharing, everything measured left as it was."""
    changed = copy.deepcopy(results)
    if demand is not None:
        changed["apps"] = [dict(app, cpu_demand=demand) for app in changed["apps"]]
    changed.setdefault("config", {})["sharing"] = None if shares is None else {"label": HOST, "pressures": shares}
    return changed


def judged(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every counted, succeeded run under a policy, with its measured and predicted slowdown."""
    summary = summarize(results)["baselines"]
    baselines = {app: entry["value"] for app, entry in summary.items()}
    better = {app: entry["better"] for app, entry in summary.items()}
    runs = counted_runs(results["runs"])
    rows = []
    for run, score in zip(runs, predicted_scores(results, runs), strict=True):
        if run.get("policy") == "baseline" or run.get("status") != "succeeded" or score is None:
            continue
        if run["app"] not in baselines:
            continue
        measured = slowdown(baselines[run["app"]], float(run["result"]["value"]), better[run["app"]])
        rows.append({"policy": run["policy"], "round": run.get("round"), "app": run["app"], "node": run.get("node"),
                     "measured": measured, "predicted": 1 + score})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    output: dict[str, Any] = {"stored": {}, "rows": []}
    for name, path in STORED.items():
        results = json.loads(path.read_text())
        output["stored"][name] = str(path.relative_to(ROOT))
        for variant, settings in VARIANTS.items():
            runs = judged(variant_results(results, settings["demand"], settings["sharing"]))
            measured = [run["measured"] for run in runs]
            predicted = [run["predicted"] for run in runs]
            output["rows"].append({
                "results": name, "variant": variant, "n": len(runs),
                "spearman": spearman(predicted, measured), "pearson": pearson(predicted, measured),
                "mean_abs_error": statistics.fmean(abs(p - m) for p, m in zip(predicted, measured, strict=True)),
                "median_measured": statistics.median(measured), "median_predicted": statistics.median(predicted),
                "runs": runs,
            })
    args.out.write_text(json.dumps(output, indent=1) + "\n")
    figure = lambda value: "-" if value is None else f"{value:.2f}"  # noqa: E731
    print("| results | variant | runs | Spearman | Pearson | median measured | median predicted | mean abs. error |")
    print("|---|---|---|---|---|---|---|---|")
    for row in output["rows"]:
        print(f"| {row['results']} | {row['variant']} | {row['n']} | {figure(row['spearman'])} | "
              f"{figure(row['pearson'])} | {figure(row['median_measured'])} | {figure(row['median_predicted'])} | "
              f"{figure(row['mean_abs_error'])} |")


if __name__ == "__main__":
    main()

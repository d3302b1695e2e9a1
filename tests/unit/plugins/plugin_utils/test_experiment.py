"""The experiment's pure parts: the policies' plans, RESULT lines, slowdown statistics."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.interference.orchestrator.plugins.module_utils.errors import AppInputError
from ansible_collections.interference.orchestrator.plugins.plugin_utils.experiment import (
    ExperimentError,
    build_rounds,
    counted_runs,
    parse_result_line,
    policy_plans,
    round_runs,
    slowdown,
    summarize,
)

APPS = [
    {"name": "c-ray", "image": "pts/c-ray", "type": "cpu"},
    {"name": "compress-7zip", "image": "pts/compress-7zip", "type": "cpu"},
    {"name": "mbw", "image": "pts/mbw", "type": "memory"},
    {"name": "stressapptest", "image": "pts/stressapptest", "type": "memory"},
]


def test_worst_puts_each_type_together_and_the_engine_and_alternating_mix_them() -> None:
    plans = policy_plans(APPS, ["w1", "w2"], ["baseline", "engine", "alternating", "scheduler", "worst"])
    assert plans["worst"] == {"c-ray": "w1", "compress-7zip": "w1", "mbw": "w2", "stressapptest": "w2"}
    assert plans["alternating"] == {"c-ray": "w1", "compress-7zip": "w2", "mbw": "w1", "stressapptest": "w2"}
    assert plans["scheduler"] == dict.fromkeys(plans["scheduler"])
    assert set(plans["baseline"].values()) == {"w1"}
    engine = plans["engine"]
    assert engine["c-ray"] != engine["compress-7zip"]
    assert engine["mbw"] != engine["stressapptest"]


def test_alternating_uses_the_dominant_resource_of_apps_with_only_a_profile() -> None:
    apps = [
        {"name": "a", "image": "x", "profile": {"memory_bandwidth": 0.9, "cpu": 0.1}},
        {"name": "b", "image": "x", "profile": {"memory_bandwidth": 0.7}},
    ]
    assert policy_plans(apps, ["w1", "w2"], ["alternating"])["alternating"] == {"a": "w1", "b": "w2"}


@pytest.mark.parametrize("policy", ["alternating", "scheduler", "worst"])
def test_a_policy_that_needs_two_nodes_fails_clearly_with_one(policy: str) -> None:
    with pytest.raises(ExperimentError, match=f"policy '{policy}' needs 2 schedulable nodes, found 1"):
        policy_plans(APPS, ["w1"], [policy])


def test_unknown_policy_and_bad_app_are_named() -> None:
    with pytest.raises(ExperimentError, match="unknown policy 'random'"):
        policy_plans(APPS, ["w1", "w2"], ["engine", "random"])
    with pytest.raises(AppInputError, match=r"apps\[1\] \(b\): field 'type'"):
        policy_plans([APPS[0], {"name": "b", "image": "x", "type": "gpu"}], ["w1", "w2"], ["engine"])


def test_result_line_is_the_last_result_of_the_log() -> None:
    log = 'noise\nRESULT {"value": 1, "better": "lower", "wall_seconds": 1}\n' \
          'RESULT {"workload": "mbw", "value": 2018.5, "better": "higher", "wall_seconds": 2.3}\n'
    assert parse_result_line(log)["value"] == 2018.5


@pytest.mark.parametrize(
    ("log", "problem"),
    [
        ("Killed\n", "no RESULT line"),
        ("RESULT {oops\n", "not JSON"),
        ('RESULT {"value": 0, "better": "lower", "wall_seconds": 1}', "no positive value"),
        ('RESULT {"value": 3, "better": "faster", "wall_seconds": 1}', "'better' must be"),
        ('RESULT {"value": 3, "better": "lower"}', "no wall_seconds"),
    ],
)
def test_a_log_without_a_valid_result_is_an_error(log: str, problem: str) -> None:
    with pytest.raises(ExperimentError, match=problem):
        parse_result_line(log)


def test_slowdown_follows_the_direction_of_the_figure() -> None:
    assert slowdown(2.0, 3.0, "lower") == pytest.approx(1.5)
    assert slowdown(2000.0, 1000.0, "higher") == pytest.approx(2.0)
    with pytest.raises(ExperimentError):
        slowdown(0.0, 1.0, "lower")


def run(policy: str, app: str, value: float | None, better: str = "lower", repeat: int = 0) -> dict[str, Any]:
    if value is None:
        return {"policy": policy, "app": app, "repeat": repeat, "status": "failed", "result": None, "log": "boom"}
    result = {"value": value, "better": better, "unit": "s", "wall_seconds": value}
    return {"policy": policy, "app": app, "repeat": repeat, "status": "succeeded", "result": result}


def test_summary_gives_median_and_spread_per_app_and_policy_and_counts_failures_apart() -> None:
    results = {
        "runs": [
            run("baseline", "a", 2.0),
            run("baseline", "a", 4.0, repeat=1),  # median baseline 3.0
            run("baseline", "m", 1000.0, better="higher"),
            run("worst", "a", 3.0),
            run("worst", "a", 6.0, repeat=1),
            run("worst", "a", None, repeat=2),
            run("worst", "m", 500.0, better="higher"),
            run("engine", "a", 3.0),
            run("engine", "m", 1000.0, better="higher"),
        ]
    }
    summary = summarize(results)
    rows = {(r["policy"], r["app"]): r for r in summary["rows"]}
    assert rows[("worst", "a")] == {"policy": "worst", "app": "a", "n": 2, "median": 1.5, "min": 1.0, "max": 2.0,
                                     "ci_low": 1.0, "ci_high": 2.0, "failed": 1, "predicted": None}
    assert rows[("worst", "m")]["median"] == pytest.approx(2.0)
    assert rows[("engine", "m")]["median"] == pytest.approx(1.0)
    assert summary["policies"]["worst"]["n"] == 3
    assert summary["policies"]["worst"]["failed"] == 1
    assert summary["baselines"]["a"]["value"] == 3.0


def test_an_app_without_a_successful_baseline_has_no_figures() -> None:
    summary = summarize({"runs": [run("baseline", "a", None), run("engine", "a", 2.0)]})
    assert summary["rows"] == [
        {"policy": "engine", "app": "a", "n": 0, "median": None, "min": None, "max": None, "ci_low": None,
         "ci_high": None, "failed": 0, "predicted": None}
    ]


def test_rounds_run_each_app_alone_each_policy_together_and_each_pair_repeat_by_repeat() -> None:
    built = build_rounds(APPS[:3], ["w1", "w2"], ["baseline", "worst", "pair"], 2)
    rounds = built["rounds"]
    per_repeat = 3 + 1 + 3  # three apps alone, one round of the policy, three pairs
    assert len(rounds) == 2 * per_repeat
    assert [r["index"] for r in rounds] == list(range(len(rounds)))
    assert [r["repeat"] for r in rounds] == [0] * per_repeat + [1] * per_repeat
    assert [len(r["jobs"]) for r in rounds[:per_repeat]] == [1, 1, 1, 3, 2, 2, 2]
    assert rounds[3]["jobs"] == [
        {"app": "c-ray", "node": "w1", "pair": None, "job": "exp-r3-c-ray", "scale": 1},
        {"app": "compress-7zip", "node": "w1", "pair": None, "job": "exp-r3-compress-7zip", "scale": 1},
        {"app": "mbw", "node": "w2", "pair": None, "job": "exp-r3-mbw", "scale": 1},
    ]
    assert rounds[4]["jobs"][0]["pair"] == ["c-ray", "compress-7zip"]
    assert {j["node"] for r in rounds if r["policy"] == "pair" for j in r["jobs"]} == {"w1"}
    with pytest.raises(ExperimentError, match="repeats must be a whole number"):
        build_rounds(APPS, ["w1", "w2"], ["engine"], 0)


def test_per_app_scales_go_to_the_named_apps_jobs_and_the_others_keep_the_common_scale() -> None:
    built = build_rounds(APPS, ["w1", "w2"], ["baseline", "engine"], 1, scale=2, scales={"mbw": 16, "c-ray": 4})
    assert built["scales"] == {"c-ray": 4, "compress-7zip": 2, "mbw": 16, "stressapptest": 2}
    jobs = [job for r in built["rounds"] for job in r["jobs"]]
    assert len(jobs) == 8
    assert all(job["scale"] == built["scales"][job["app"]] for job in jobs)


@pytest.mark.parametrize(("scale", "scales", "message"), [
    (0, None, r"experiment_scale must be a whole number >= 1, got 0"),
    (True, None, r"experiment_scale must be a whole number >= 1, got True"),
    (1, {"mbx": 2}, r"experiment_app_scales: 'mbx' is not an app of the experiment \(c-ray, "),
    (1, {"mbw": "16"}, r"experiment_app_scales\['mbw'\]: must be a whole number >= 1, got '16'"),
    (1, {"mbw": 0}, r"experiment_app_scales\['mbw'\]: must be a whole number >= 1, got 0"),
    (1, ["mbw"], r"experiment_app_scales must be a mapping of app name to scale"),
])
def test_a_bad_scale_is_named_before_any_round(scale: Any, scales: Any, message: str) -> None:
    with pytest.raises(ExperimentError, match=message):
        build_rounds(APPS, ["w1", "w2"], ["engine"], 1, scale=scale, scales=scales)


# kind's two isolated workers: one CPU each, one host (kubernetes.io/os is the same on both).
KIND_WORKERS = [{"name": name, "labels": {"kubernetes.io/os": "linux"}, "allocatable": {"cpu": "1", "memory": "8Gi"}}
                for name in ("w1", "w2")]
DEMANDING = [dict(app, cpu_demand=1) for app in APPS]
MEMORY_SHARED = {"label": "kubernetes.io/os", "pressures": {"memory_bandwidth": 0.5}}


def test_the_engine_policy_plans_with_the_sharing_site_yml_would_use() -> None:
    # Every app keeps one core busy and the workers share the memory bus: the two
    # memory-bound apps take turns on one worker rather than meet across workers.
    shared = policy_plans(DEMANDING, KIND_WORKERS, ["engine"], MEMORY_SHARED)
    assert shared["engine"]["mbw"] == shared["engine"]["stressapptest"]
    assert shared["engine"]["c-ray"] == shared["engine"]["compress-7zip"]
    # Without the sharing the same apps are spread by type, as before.
    alone = policy_plans(DEMANDING, KIND_WORKERS, ["engine"])["engine"]
    assert alone["mbw"] != alone["stressapptest"]
    assert alone["c-ray"] != alone["compress-7zip"]
    built = build_rounds(DEMANDING, KIND_WORKERS, ["engine"], 1, sharing=MEMORY_SHARED)
    assert built["plans"]["engine"] == shared["engine"]


# One round of two Jobs as the API server returns them after the round (k8s_info resources).
ROUND = {"index": 3, "policy": "engine", "repeat": 0,
         "jobs": [{"app": "mbw", "node": "w1", "pair": None, "job": "exp-r3-mbw"},
                  {"app": "stressapptest", "node": "w1", "pair": None, "job": "exp-r3-stressapptest"}]}
GOOD_LOG = 'noise\nRESULT {"value": 5000.0, "better": "higher", "wall_seconds": 3.1}\n'


def job(name: str, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"conditions": [
        {"type": kind, "status": "True", "reason": reason, "message": message} for kind, reason, message in conditions
    ]}}


def pod(job_name: str, node: str, created: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": f"{job_name}-{created[-2:]}", "labels": {"job-name": job_name},
                         "creationTimestamp": created},
            "spec": {"nodeName": node}, "status": status}


OOM_KILLED = {"phase": "Failed", "containerStatuses": [
    {"name": "workload", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}


def test_a_round_records_each_run_with_its_figure_or_why_it_failed() -> None:
    jobs = [job("exp-r3-mbw", ("Complete", "", "")),
            job("exp-r3-stressapptest", ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified "
                                         "backoff limit"), ("Failed", "BackoffLimitExceeded", ""))]
    pods = [pod("exp-r3-mbw", "w1", "2026-12-04T10:00:00Z", phase="Succeeded"),
            pod("exp-r3-stressapptest", "w1", "2026-12-04T10:00:01Z", **OOM_KILLED)]
    runs = round_runs(ROUND, jobs, pods, {"exp-r3-mbw": GOOD_LOG, "exp-r3-stressapptest": ""}, 1796363517)
    ok, failed = runs
    assert ok["status"] == "succeeded" and ok["result"]["value"] == 5000.0 and ok["error"] is None
    assert ok["termination"] is None and ok["node"] == "w1" and ok["job"] == "exp-r3-mbw"
    assert failed["status"] == "failed" and failed["result"] is None
    # The Job's reasons and the pod's own word (the runtime's OOM kill), not only "Failed".
    assert failed["error"] == (
        "Job exp-r3-stressapptest did not complete: FailureTarget (BackoffLimitExceeded: Job has reached the "
        "specified backoff limit), Failed (BackoffLimitExceeded) [pod exp-r3-stressapptest-1Z on w1, Failed; "
        "container terminated OOMKilled, exit code 137]"
    )
    assert failed["termination"]["container"] == {"state": "terminated", "reason": "OOMKilled", "exit_code": 137,
                                                  "signal": None, "message": None}
    assert {r["attempt"] for r in runs} == {1} and not any(r["superseded"] for r in runs)
    assert [r["start_at"] for r in runs] == [1796363517, 1796363517]


def test_an_evicted_pod_a_missing_job_and_a_log_without_result_are_named() -> None:
    evicted = pod("exp-r3-mbw", "w1", "2026-12-04T10:00:00Z", phase="Failed", reason="Evicted",
                  message="The node was low on resource: memory.")
    runs = round_runs(ROUND, [job("exp-r3-mbw", ("Failed", "DeadlineExceeded", "Job was active longer"))],
                      [evicted], {}, 0)
    assert runs[0]["error"] == ("Job exp-r3-mbw did not complete: Failed (DeadlineExceeded: Job was active longer) "
                                "[pod exp-r3-mbw-0Z on w1, Failed; Evicted: The node was low on resource: memory.]")
    assert runs[1]["error"] == "Job exp-r3-stressapptest was not found [no pod left]"
    complete = [job(name, ("Complete", "", "")) for name in ("exp-r3-mbw", "exp-r3-stressapptest")]
    runs = round_runs(ROUND, complete, [], {"exp-r3-mbw": GOOD_LOG, "exp-r3-stressapptest": "Killed"}, 0)
    assert runs[1]["error"] == "no RESULT line in the log [no pod left]"


def test_the_newest_pod_of_a_job_speaks_for_it() -> None:
    old = pod("exp-r3-mbw", "w1", "2026-12-04T10:00:00Z", phase="Failed", reason="Evicted")
    new = pod("exp-r3-mbw", "w2", "2026-12-04T10:00:09Z", phase="Failed", containerStatuses=[
        {"state": {"waiting": {"reason": "ErrImageNeverPull", "message": "image not present"}}}])
    runs = round_runs(ROUND, [job("exp-r3-mbw", ("Failed", "", ""))], [new, old], {}, 0)
    assert runs[0]["node"] == "w2"
    assert runs[0]["error"].endswith("[pod exp-r3-mbw-9Z on w2, Failed; container waiting ErrImageNeverPull: "
                                     "image not present]")


def test_a_failed_run_supersedes_its_whole_round_while_attempts_remain() -> None:
    jobs = [job("exp-r3-mbw", ("Complete", "", "")), job("exp-r3-stressapptest", ("Failed", "", ""))]
    logs = {"exp-r3-mbw": GOOD_LOG}
    first = round_runs(ROUND, jobs, [], logs, 0, attempt=1, attempts=2)
    # The neighbour that succeeded ran beside a failure: it is superseded too.
    assert [(r["attempt"], r["status"], r["superseded"]) for r in first] == [
        (1, "succeeded", True), (1, "failed", True)]
    last = round_runs(ROUND, jobs, [], logs, 0, attempt=2, attempts=2)
    assert [r["superseded"] for r in last] == [False, False]
    clean = [job(n, ("Complete", "", "")) for n in ("exp-r3-mbw", "exp-r3-stressapptest")]
    clean_logs = {name: GOOD_LOG for name in ("exp-r3-mbw", "exp-r3-stressapptest")}
    assert not any(r["superseded"] for r in round_runs(ROUND, clean, [], clean_logs, 0, attempt=1, attempts=2))
    # Only what counts reaches the figures.
    assert counted_runs([*first, *last]) == last
    with pytest.raises(ExperimentError, match="experiment_round_attempts must be a whole number >= 1, got 0"):
        round_runs(ROUND, jobs, [], logs, 0, attempt=1, attempts=0)


def test_superseded_runs_give_no_figure_and_count_as_no_failure() -> None:
    superseded = {**run("engine", "a", None), "superseded": True}
    outlier = {**run("engine", "a", 100.0), "superseded": True}
    summary = summarize({"runs": [run("baseline", "a", 2.0), superseded, outlier, run("engine", "a", 3.0)]})
    assert summary["rows"] == [
        {"policy": "engine", "app": "a", "n": 1, "median": 1.5, "min": 1.5, "max": 1.5, "ci_low": 1.5,
         "ci_high": 1.5, "failed": 0, "predicted": None}
    ]

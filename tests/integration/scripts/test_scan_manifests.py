"""The manifest scan: what scan/render.yml renders, and how scan/findings.py judges checkov's report.

checkov itself runs in `make scan` (scripts/scan-manifests.sh, its own venv);
here the report is written by the test in checkov's JSON shape, and the
rendering runs through ansible-playbook as the script runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from scan import findings
from tests.support.playbook_json import REPO, VENV_BIN

SKIP_LIST = REPO / "scan" / "skip-list.yml"
GROUPS = {"apps", "experiment", "monitoring", "scheduler_extender", "scheduler_plugins"}


def result(check: str, group: str, resource: str = "Deployment.apps.x") -> dict[str, Any]:
    return {"check_id": check, "check_name": f"name of {check}", "file_path": f"/rendered/{group}.yaml",
            "resource": resource}


def report(passed: list[dict[str, Any]], failed: list[dict[str, Any]]) -> dict[str, Any]:
    return {"check_type": "kubernetes", "results": {"passed_checks": passed, "failed_checks": failed}}


SKIPS = findings.read_skip_list(
    {"workloads": [{"check": "CKV_K8S_8", "in": ["apps", "experiment"], "why": "idle containers"}]}
)


def test_a_listed_failure_is_explained_and_any_other_is_not() -> None:
    verdict = findings.judge(
        report(
            [result("CKV_K8S_20", "apps")],
            [result("CKV_K8S_8", "apps"), result("CKV_K8S_8", "experiment"), result("CKV_K8S_8", "monitoring"),
             result("CKV_K8S_9", "apps", "Deployment.apps.web")],
        ),
        SKIPS,
    )
    assert (verdict.passed, verdict.explained) == (1, 2)
    assert verdict.unexplained == [
        "monitoring: CKV_K8S_8 (name of CKV_K8S_8) fails on Deployment.apps.x",
        "apps: CKV_K8S_9 (name of CKV_K8S_9) fails on Deployment.apps.web",
    ]
    assert verdict.stale == []
    assert not verdict.ok
    assert verdict.per_group["apps"] == {"passed": 1, "explained": 1, "unexplained": 1}


def test_an_entry_that_explains_nothing_is_stale() -> None:
    verdict = findings.judge([report([], [result("CKV_K8S_8", "apps")])], SKIPS)  # several frameworks: a list
    assert verdict.stale == ["workloads: CKV_K8S_8 in experiment no longer fails: remove it from the skip list"]
    assert not verdict.ok


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"check": "CKV_K8S_8", "in": ["apps"]}, "'why' must say why"),
        ({"check": "CKV_K8S_8", "in": ["apps"], "why": "  "}, "'why' must say why"),
        ({"check": "CKV_K8S_8", "why": "x"}, "'in' must list the groups"),
        ({"in": ["apps"], "why": "x"}, "'check' must be a checkov check ID"),
    ],
)
def test_a_skip_entry_without_its_reason_or_scope_is_refused(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        findings.read_skip_list({"workloads": [entry]})


def test_a_skip_list_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(TypeError, match="mapping of section name"):
        findings.read_skip_list([{"check": "CKV_K8S_8"}])
    with pytest.raises(TypeError, match=r"workloads\[0\]: must be a mapping"):
        findings.read_skip_list({"workloads": ["CKV_K8S_8"]})


def test_the_command_fails_on_an_unexplained_finding_and_passes_when_all_are_explained(tmp_path: Path) -> None:
    skip_list = tmp_path / "skip.yml"
    skip_list.write_text(yaml.safe_dump({"workloads": [{"check": "CKV_K8S_8", "in": ["apps"], "why": "idle"}]}))
    scanned = tmp_path / "checkov.json"
    scanned.write_text(json.dumps(report([], [result("CKV_K8S_8", "apps"), result("CKV_K8S_9", "apps")])))
    assert findings.main([str(scanned), str(skip_list)]) == 1
    scanned.write_text(json.dumps(report([result("CKV_K8S_9", "apps")], [result("CKV_K8S_8", "apps")])))
    assert findings.main([str(scanned), str(skip_list)]) == 0


def test_the_projects_skip_list_gives_a_reason_for_every_entry_and_names_only_rendered_files() -> None:
    entries = findings.read_skip_list(yaml.safe_load(SKIP_LIST.read_text()))
    assert entries
    for entry in entries:
        assert set(entry.groups) <= GROUPS, entry
        if entry.section == "pending_extender_hardening":
            assert set(entry.groups) <= {"scheduler_extender", "scheduler_plugins"}, entry
        else:
            assert len(entry.why) > 40, f"{entry.check}: say why it does not apply"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("scan") / "rendered"
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(REPO / "tests" / "support" / "localhost.yml"),
         str(REPO / "scan" / "render.yml"), "-e", f"scan_dir={out}"],
        cwd=REPO, capture_output=True, text=True, check=False,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    return {path.stem: list(yaml.safe_load_all(path.read_text())) for path in out.glob("*.yaml")}


def test_render_writes_every_roles_objects_valid_for_kubernetes_1_34(rendered: dict[str, list[dict[str, Any]]]) -> None:
    assert set(rendered) == GROUPS
    assert {m["metadata"]["name"] for m in rendered["apps"]} >= {"c-ray", "mbw", "web", "extended", "plugged"}
    for objects in rendered.values():
        assert objects
        for manifest in objects:
            kubernetes_validate.validate(manifest, "1.34.0", strict=True)


def test_the_experiment_jobs_are_hardened_like_the_apps(rendered: dict[str, list[dict[str, Any]]]) -> None:
    defaults = yaml.safe_load((REPO / "roles" / "experiment" / "defaults" / "main.yml").read_text())
    apps_defaults = yaml.safe_load((REPO / "roles" / "apps" / "defaults" / "main.yml").read_text())
    assert defaults["experiment_security_context"] == apps_defaults["apps_security_context"]
    for job in rendered["experiment"]:
        spec = job["spec"]["template"]["spec"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["containers"][0]["securityContext"] == defaults["experiment_security_context"]

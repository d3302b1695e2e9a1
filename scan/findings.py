"""Sort checkov's findings on the rendered manifests into explained and unexplained ones.

    python scan/findings.py checkov.json scan/skip-list.yml

checkov.json is `checkov -o json` run on the folder scan/render.yml writes
(one file per role: the file's stem is the group a skip entry names). A failed
check is explained when the skip list has an entry for its check ID and group,
with a reason. The exit status is 1 when a finding is unexplained or when an
entry explains nothing (its check no longer fails there, so the entry must go),
else 0. Prints one line per problem, then the counts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class SkipEntry:
    """One check that does not apply to some groups, and why."""

    check: str
    groups: tuple[str, ...]
    why: str
    section: str


@dataclass
class Verdict:
    """What the scan found, against the skip list."""

    passed: int
    explained: int
    unexplained: list[str]
    stale: list[str]
    per_group: dict[str, Counter[str]]

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def read_skip_list(data: object) -> list[SkipEntry]:
    """Every entry of every section of the skip list; an entry without a reason is an error."""
    if not isinstance(data, Mapping):
        raise TypeError("skip list: must be a mapping of section name to a list of entries")
    entries = []
    for section, items in data.items():
        for number, item in enumerate(items or []):
            where = f"{section}[{number}]"
            if not isinstance(item, Mapping):
                raise TypeError(f"skip list {where}: must be a mapping with check, in, why")
            check, groups, why = item.get("check"), item.get("in"), item.get("why")
            if not isinstance(check, str) or not check:
                raise ValueError(f"skip list {where}: 'check' must be a checkov check ID")
            if not isinstance(groups, list) or not groups or not all(isinstance(g, str) for g in groups):
                raise ValueError(f"skip list {where} ({check}): 'in' must list the groups it applies to")
            if not isinstance(why, str) or not why.strip():
                raise ValueError(f"skip list {where} ({check}): 'why' must say why the check does not apply")
            entries.append(SkipEntry(check, tuple(groups), why.strip(), section))
    return entries


def checkov_results(report: Any) -> Iterable[Mapping[str, Any]]:
    """The `results` of each framework in a checkov JSON report (a dict for one framework, a list for several)."""
    for framework in report if isinstance(report, list) else [report]:
        yield framework.get("results") or {}


def judge(report: Any, entries: list[SkipEntry]) -> Verdict:
    """Compare checkov's report with the skip list."""
    skips = {(entry.check, group): entry for entry in entries for group in entry.groups}
    used: set[tuple[str, str]] = set()
    passed = explained = 0
    unexplained: list[str] = []
    per_group: dict[str, Counter[str]] = {}
    for results in checkov_results(report):
        for check in results.get("passed_checks") or []:
            passed += 1
            per_group.setdefault(Path(check["file_path"]).stem, Counter())["passed"] += 1
        for check in results.get("failed_checks") or []:
            group = Path(check["file_path"]).stem
            key = (check["check_id"], group)
            counts = per_group.setdefault(group, Counter())
            if key in skips:
                used.add(key)
                explained += 1
                counts["explained"] += 1
            else:
                counts["unexplained"] += 1
                name, resource = check.get("check_name", ""), check.get("resource", "?")
                unexplained.append(f"{group}: {check['check_id']} ({name}) fails on {resource}")
    stale = [
        f"{entry.section}: {entry.check} in {group} no longer fails: remove it from the skip list"
        for (check, group), entry in sorted(skips.items())
        if (check, group) not in used
    ]
    return Verdict(passed, explained, unexplained, stale, per_group)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: findings.py CHECKOV_JSON SKIP_LIST", file=sys.stderr)
        return 2
    report_path, skip_path = (Path(arg) for arg in argv)
    try:
        report = json.loads(report_path.read_text())
        entries = read_skip_list(yaml.safe_load(skip_path.read_text()) or {})
    except (OSError, TypeError, ValueError, yaml.YAMLError) as exc:
        print(f"scan: {exc}", file=sys.stderr)
        return 2
    verdict = judge(report, entries)
    for line in verdict.unexplained:
        print(f"UNEXPLAINED {line}")
    for line in verdict.stale:
        print(f"STALE {line}")
    for group, counts in sorted(verdict.per_group.items()):
        print(
            f"{group}: {counts['passed']} passed, {counts['explained']} failed and explained in the skip list, "
            f"{counts['unexplained']} failed unexplained"
        )
    print(
        f"total: {verdict.passed} passed, {verdict.explained} failed and explained in the skip list, "
        f"{len(verdict.unexplained)} failed unexplained, {len(verdict.stale)} stale skip entries"
    )
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

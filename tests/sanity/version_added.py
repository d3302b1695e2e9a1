"""Every version_added of the collection's docs is a version galaxy.yml has reached.

Reads the DOCUMENTATION of each plugin (plugins/<type>/*.py) and each role's
meta/argument_specs.yml, at any depth (options, suboptions), and reports each
version_added that is later than galaxy.yml's version, or not a semantic
version. Usage: python tests/sanity/version_added.py [COLLECTION_ROOT]; exit 1
on findings. scripts/sanity.sh runs it; tests/unit/test_version_added.py too.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from ansible.utils.version import SemanticVersion


def _version_added(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "version_added":
                yield where, str(value)
            else:
                yield from _version_added(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _version_added(value, f"{where}[{index}]")


def _plugin_docs(path: Path) -> Any:
    for statement in ast.parse(path.read_text()).body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DOCUMENTATION" for t in statement.targets
        ):
            return yaml.safe_load(ast.literal_eval(statement.value))
    return None


def collection_version(root: Path) -> str:
    """galaxy.yml's version (a source tree), or MANIFEST.json's (an installed collection, built from galaxy.yml)."""
    if (root / "galaxy.yml").is_file():
        return str(yaml.safe_load((root / "galaxy.yml").read_text())["version"])
    return str(json.loads((root / "MANIFEST.json").read_text())["collection_info"]["version"])


def findings(root: Path) -> list[str]:
    """One line per version_added that galaxy.yml's version has not reached."""
    current = SemanticVersion(collection_version(root))
    found: list[tuple[str, str]] = []
    for path in sorted((root / "plugins").glob("*/*.py")):
        docs = _plugin_docs(path)
        if docs is not None:
            found += _version_added(docs, str(path.relative_to(root)))
    for path in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        found += _version_added(yaml.safe_load(path.read_text()), str(path.relative_to(root)))
    problems = []
    for where, value in found:
        try:
            version = SemanticVersion(value)
        except ValueError:
            problems.append(f"{where}: version_added {value!r} is not a semantic version")
            continue
        if version > current:
            problems.append(f"{where}: version_added {value} is later than galaxy.yml's version {current.vstring}")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    problems = findings(root)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

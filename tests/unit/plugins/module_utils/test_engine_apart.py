"""The engine stands apart: importable without Ansible, holding no role's helpers, imported the same way everywhere."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
MODULE_UTILS = REPO / "plugins" / "module_utils"
PACKAGE = "ansible_collections.interference.orchestrator.plugins.module_utils"


def test_every_engine_module_imports_with_ansible_unavailable() -> None:
    modules = sorted(path.stem for path in MODULE_UTILS.glob("*.py") if path.stem != "__init__")
    code = (
        "import sys\n"
        "sys.modules['ansible'] = None  # any import of ansible now fails\n"
        f"for name in {modules!r}:\n"
        f"    __import__('{PACKAGE}.' + name)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False,
        env={"PYTHONPATH": str(REPO / "collections"), "PATH": ""},
    )
    assert run.returncode == 0, run.stderr


def test_the_engine_imports_nothing_outside_itself_but_the_standard_library_and_kubernetes() -> None:
    allowed = {"__future__", "kubernetes", *sys.stdlib_module_names}
    for path in MODULE_UTILS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] in allowed, f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in allowed, f"{path.name} imports {alias.name}"


def test_no_benchmark_edits_the_import_path() -> None:
    for path in (REPO / "benchmarks").glob("*.py"):
        assert "sys.path" not in path.read_text(), f"{path.name} edits sys.path; `make setup` installs the roots"

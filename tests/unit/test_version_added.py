"""version_added in the docs never runs ahead of galaxy.yml (tests/sanity/version_added.py)."""

from __future__ import annotations

from pathlib import Path

from tests.sanity.version_added import findings

REPO = Path(__file__).resolve().parents[2]


def test_the_collections_docs_name_no_version_galaxy_has_not_reached() -> None:
    assert findings(REPO) == []


def test_a_plugin_or_role_option_ahead_of_galaxy_is_reported(tmp_path: Path) -> None:
    (tmp_path / "galaxy.yml").write_text("version: 0.1.0\n")
    (tmp_path / "plugins" / "filter").mkdir(parents=True)
    (tmp_path / "plugins" / "filter" / "f.py").write_text('DOCUMENTATION = """\nname: f\nversion_added: 0.2.0\n"""\n')
    specs = tmp_path / "roles" / "r" / "meta"
    specs.mkdir(parents=True)
    (specs / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      x: {type: str, version_added: '1.0'}\n"
        "      y: {type: str, version_added: 0.1.0}\n"
    )
    assert findings(tmp_path) == [
        "plugins/filter/f.py: version_added 0.2.0 is later than galaxy.yml's version 0.1.0",
        "roles/r/meta/argument_specs.yml.argument_specs.main.options.x: version_added '1.0' is not a semantic version",
    ]


def test_an_installed_collection_is_read_by_its_manifest(tmp_path: Path) -> None:
    (tmp_path / "MANIFEST.json").write_text('{"collection_info": {"version": "0.1.0"}}')
    (tmp_path / "plugins" / "filter").mkdir(parents=True)
    (tmp_path / "plugins" / "filter" / "f.py").write_text('DOCUMENTATION = """\nname: f\nversion_added: 0.1.1\n"""\n')
    assert findings(tmp_path) == ["plugins/filter/f.py: version_added 0.1.1 is later than galaxy.yml's version 0.1.0"]

"""hack/align_go_modules.py: the version order, the targets and what each wrapper must raise.

`make go-test` runs the script's --check on the real wrappers (it needs Go and the module
cache); these tests pin the decisions it makes from the build lists, without Go.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "align_go_modules.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("align_go_modules", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


align = load()

# Ascending, as Go orders them (golang.org/x/mod/semver): prereleases and
# pseudo-versions before their release, numeric fields by number.
ORDERED = [
    "v0.0.0-20230124172434-306776ec8161",
    "v0.0.0-20250102033503-faa5f7b0171c",
    "v0.9.0",
    "v0.34.0-alpha.1",
    "v0.34.0-rc.2",
    "v0.34.0-rc.10",
    "v0.34.0",
    "v0.34.2",
    "v0.34.4",
    "v1.0.1-0.20181226105442-5d4384ee4fb2",
    "v1.0.1",
    "v2.3.0+incompatible",
    "v26.1.4+incompatible",
    "v28.5.2+incompatible",
]


def test_versions_sort_as_go_sorts_them() -> None:
    shuffled = ORDERED[:]
    random.Random(25).shuffle(shuffled)
    assert sorted(shuffled, key=align.semver_key) == ORDERED


def test_a_version_that_is_not_semantic_is_refused_by_name() -> None:
    with pytest.raises(SystemExit, match="'latest' is not a semantic version"):
        align.semver_key("latest")


LISTS = {
    "kubernetes": {"k8s.io/api": ("v0.34.4", True), "golang.org/x/sys": ("v0.31.0", False),
                   "only/kube": ("v1.0.0", False)},
    "helm": {"k8s.io/api": ("v0.34.2", False), "golang.org/x/sys": ("v0.38.0", False)},
    "coredns": {"k8s.io/api": ("v0.32.3", False), "golang.org/x/sys": ("v0.38.0", False),
                "only/coredns": ("v0.1.0", False)},
}


def test_each_shared_module_targets_its_highest_version_and_a_module_one_wrapper_uses_is_left_alone() -> None:
    wanted, errors = align.targets(LISTS)
    assert errors == []
    assert wanted == {"k8s.io/api": "v0.34.4", "golang.org/x/sys": "v0.38.0"}


def test_each_wrapper_raises_what_it_selects_below_the_target_and_never_a_pinned_module() -> None:
    wanted, _ = align.targets(LISTS)
    assert align.behind(LISTS, wanted) == {
        "kubernetes": ["golang.org/x/sys@v0.38.0"],
        "helm": ["k8s.io/api@v0.34.4"],
        "coredns": ["k8s.io/api@v0.34.4"],
    }


def test_a_pinned_module_below_what_another_wrapper_needs_is_an_error_naming_both() -> None:
    lists = {**LISTS, "kwok": {"k8s.io/api": ("v0.36.1", False)}}
    wanted, errors = align.targets(lists)
    assert wanted["k8s.io/api"] == "v0.36.1"
    assert errors == ["k8s.io/api: kubernetes pins v0.34.4 by a replace directive, but kwok v0.36.1"]


def test_aligned_lists_need_nothing_raised() -> None:
    wanted, _ = align.targets(LISTS)
    aligned = {wrapper: {path: (wanted.get(path, version), pinned) for path, (version, pinned) in modules.items()}
               for wrapper, modules in LISTS.items()}
    assert not any(align.behind(aligned, align.targets(aligned)[0]).values())


def test_a_kept_pair_neither_sets_the_target_nor_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(align, "KEEP", {("golang.org/x/sys", "kubernetes"): "why"})
    lists = {**LISTS, "kubernetes": {**LISTS["kubernetes"], "golang.org/x/sys": ("v0.99.0", False)}}
    wanted, errors = align.targets(lists)
    assert (wanted["golang.org/x/sys"], errors) == ("v0.38.0", [])
    assert "golang.org/x/sys@v0.38.0" not in align.behind(lists, wanted)["kubernetes"]


def test_the_kept_modules_are_the_ones_that_break_and_each_says_why() -> None:
    node = "roles/kind_cluster/files/kind-node-image/go"
    assert align.kept("k8s.io/cri-api", f"{node}/containerd")
    assert align.kept("github.com/cyphar/filepath-securejoin", f"{node}/runc")
    # A path ending in / keeps everything under it, for that wrapper only.
    assert align.kept("k8s.io/client-go", f"{node}/coredns") and align.kept("sigs.k8s.io/yaml", f"{node}/coredns")
    assert not align.kept("k8s.io/client-go", f"{node}/crictl")
    assert not align.kept("k8s.io/cri-api-extra", f"{node}/containerd")
    assert not align.kept("golang.org/x/sys", f"{node}/coredns")
    assert all(reason for reason in align.KEEP.values())

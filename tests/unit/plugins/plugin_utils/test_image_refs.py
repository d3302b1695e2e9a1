"""image_refs: content tags, what a built image is called in the user's registry, and which registries are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.interference.orchestrator.plugins.filter import content_tag as content_tag_filter
from ansible_collections.interference.orchestrator.plugins.filter.registry_digests import FilterModule as DigestFilters
from ansible_collections.interference.orchestrator.plugins.filter.registry_image import FilterModule, registry_image
from ansible_collections.interference.orchestrator.plugins.plugin_utils.image_refs import (
    ImageReferenceError,
    check_registry,
    content_tag,
    digest_references,
    registry_reference,
)
from hypothesis import given
from hypothesis import strategies as st

ECR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/interference"


@pytest.mark.parametrize(
    ("image", "registry", "expected"),
    [
        ("interference-orchestrator/povray:h-0123abcd4567", ECR, f"{ECR}/povray:h-0123abcd4567"),
        ("pts/c-ray:h-0123abcd4567", "127.0.0.1:5000", "127.0.0.1:5000/c-ray:h-0123abcd4567"),
        ("interference-extender:h-aa", "localhost:5000/a/b/", "localhost:5000/a/b/interference-extender:h-aa"),
        ("interference-gpu-scheduler:h-bb", "reg.example.com", "reg.example.com/interference-gpu-scheduler:h-bb"),
        ("pts/mbw:h-cc", "", "pts/mbw:h-cc"),
        ("pts/mbw:h-cc", "  ", "pts/mbw:h-cc"),
        ("localhost:5000/ns/mbw:h-cc", "reg.example.com:443/x", "reg.example.com:443/x/mbw:h-cc"),
        # A role default read before the role computed its tag.
        ("interference-extender:", "reg.example.com/x", "reg.example.com/x/interference-extender:"),
    ],
)
def test_pushed_reference(image: str, registry: str, expected: str) -> None:
    assert registry_reference(image, registry) == expected


@pytest.mark.parametrize(
    ("registry", "message"),
    [
        (f"https://{ECR}", "without a scheme"),
        ("myuser", "would be read as a Docker Hub namespace"),
        ("myuser/images", "would be read as a Docker Hub namespace; start with the registry host"),
        ("reg.example.com/Interference", "'Interference' must be lowercase"),
        ("reg.example.com//x", "'' must be lowercase"),
        ("-bad.example.com", "is not a registry host[:port]"),
        ("reg.example.com:port/x", "is not a registry host[:port]"),
    ],
)
def test_bad_registries_are_named_with_what_is_wrong(registry: str, message: str) -> None:
    with pytest.raises(ImageReferenceError, match=r"^images_registry '.*': ") as error:
        check_registry(registry)
    assert message in str(error.value)


def test_an_image_without_a_tag_cannot_be_pushed() -> None:
    with pytest.raises(ImageReferenceError, match="image 'localhost:5000/povray': needs a tag"):
        registry_reference("localhost:5000/povray", ECR)


def test_the_filter_turns_errors_into_filter_errors() -> None:
    assert FilterModule().filters()["registry_image"] is registry_image
    assert registry_image("pts/c-ray:h-1", ECR) == f"{ECR}/c-ray:h-1"
    with pytest.raises(AnsibleFilterError, match="without a scheme"):
        registry_image("pts/c-ray:h-1", "http://127.0.0.1:5000")


_component = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8})?", fullmatch=True)


@given(
    host=st.sampled_from(["127.0.0.1:5000", "localhost", "reg.example.com", ECR.partition("/")[0]]),
    path=st.lists(_component, max_size=3),
    names=st.lists(_component, min_size=1, max_size=3),
    tag=st.from_regex(r"h-[0-9a-f]{12}", fullmatch=True),
)
def test_the_pushed_reference_keeps_the_tag_and_the_last_name_under_the_registry(
    host: str, path: list[str], names: list[str], tag: str
) -> None:
    registry = "/".join([host, *path])
    pushed = registry_reference("/".join(names) + ":" + tag, registry)
    assert pushed == f"{registry}/{names[-1]}:{tag}"
    # Pushing the pushed reference again to the same registry names the same image.
    assert registry_reference(pushed, registry) == pushed


FILES = [("Dockerfile", b"FROM scratch\n"), ("pkg/a.go", b"package a\n"), ("go.mod", b"module x\n")]


def test_content_tag_is_stable_and_independent_of_the_order_given() -> None:
    tag = content_tag(FILES)
    assert tag.startswith("h-") and len(tag) == 14 and int(tag[2:], 16) >= 0
    assert content_tag(list(reversed(FILES))) == tag
    assert content_tag(FILES, prefix="v", length=6) == "v" + tag[2:8]


@pytest.mark.parametrize(
    "changed",
    [
        [("Dockerfile", b"FROM scratch\nUSER 1\n"), *FILES[1:]],  # an edit
        [*FILES, ("pkg/b.go", b"package a\n")],  # an added file
        [FILES[0], ("pkg/c.go", FILES[1][1]), FILES[2]],  # a renamed file
        FILES[:2],  # a removed file
    ],
)
def test_every_kind_of_change_gives_a_new_content_tag(changed: list[tuple[str, bytes]]) -> None:
    assert content_tag(changed) != content_tag(FILES)


def test_the_content_tag_filter_reads_files_relative_to_the_root(tmp_path: Path) -> None:
    for relative, content in FILES:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(content)
    paths = [str(tmp_path / relative) for relative, _ in FILES]
    assert content_tag_filter.content_tag(paths, str(tmp_path)) == content_tag(FILES)
    with pytest.raises(AnsibleFilterError, match=r"content_tag: cannot read .*missing\.go"):
        content_tag_filter.content_tag([*paths, str(tmp_path / "missing.go")], str(tmp_path))


# Tags the roles' Jinja computed (ansible-core 2.19) before content_tag replaced it, for the same inputs:
# the workload images' formula (files, then the base, then the workload) and the plugin scheduler's
# (a stat checksum first, then the files). Equal tags mean no image is rebuilt by the change of code.
CONTEXT = [("Dockerfile", b"FROM scratch\n"), ("sub/run", b"#!/bin/sh\necho hi\n")]


def test_the_workload_images_keep_the_tags_the_jinja_gave() -> None:
    assert content_tag(CONTEXT, extra=["base:1", "pts/w"]) == "h-ccbb6d5fe0d4"


def test_a_checksum_given_by_stat_comes_first_and_keeps_the_jinja_tag() -> None:
    assert content_tag(CONTEXT[:1], hashed=[("gpu-scheduler", "0123abcd")]) == "h-aa1ddb2e34f6"


def test_hashed_and_extra_lines_each_change_the_tag() -> None:
    plain = content_tag(CONTEXT)
    assert len({plain, content_tag(CONTEXT, extra=["base:1"]), content_tag(CONTEXT, extra=["base:2"])}) == 3
    assert content_tag(CONTEXT, hashed=[("bin", "aa")]) != content_tag(CONTEXT, hashed=[("bin", "ab")])


def test_the_filter_passes_hashed_and_extra_and_refuses_the_wrong_types(tmp_path: Path) -> None:
    for relative, content in CONTEXT:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(content)
    paths = [str(tmp_path / relative) for relative, _ in CONTEXT]
    assert content_tag_filter.content_tag(paths, str(tmp_path), extra=["base:1", "pts/w"]) == "h-ccbb6d5fe0d4"
    assert content_tag_filter.content_tag(paths[:1], str(tmp_path), hashed={"gpu-scheduler": "0123abcd"}) == (
        "h-aa1ddb2e34f6"
    )
    with pytest.raises(AnsibleFilterError, match="hashed must be a mapping"):
        content_tag_filter.content_tag(paths, str(tmp_path), hashed=["x"])  # type: ignore[arg-type]
    with pytest.raises(AnsibleFilterError, match="extra must be a list"):
        content_tag_filter.content_tag(paths, str(tmp_path), extra="base:1")  # type: ignore[arg-type]


DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def test_a_pushed_reference_is_named_by_the_digest_the_engine_recorded_for_its_repository() -> None:
    images: list[dict[str, Any]] = [
        {
            "Id": "sha256:" + "1" * 64,
            "RepoTags": [f"{ECR}/mbw:h-0123abcd4567", "interference-orchestrator/mbw:h-0123abcd4567"],
            # Also pushed elsewhere: only the repository of the reference counts.
            "RepoDigests": [f"reg.example.com/x/mbw@{DIGEST_B}", f"{ECR}/mbw@{DIGEST_A}"],
        },
        # Built, never pushed (a check run before the first push): left out, the caller keeps the tag.
        {"RepoTags": [f"{ECR}/povray:h-0123abcd4567"], "RepoDigests": []},
        # Digests of another repository only.
        {"RepoTags": [f"{ECR}/7zip:h-0123abcd4567"], "RepoDigests": [f"{ECR}/other@{DIGEST_A}"]},
    ]
    wanted = [f"{ECR}/mbw:h-0123abcd4567", f"{ECR}/povray:h-0123abcd4567", f"{ECR}/7zip:h-0123abcd4567",
              f"{ECR}/absent:h-0123abcd4567"]
    assert digest_references(images, wanted) == {f"{ECR}/mbw:h-0123abcd4567": f"{ECR}/mbw@{DIGEST_A}"}
    # Through the filter as the roles call it.
    assert DigestFilters().filters()["registry_digests"](images, wanted) == digest_references(images, wanted)


def test_only_a_well_formed_sha256_digest_is_used_and_the_first_listed_wins() -> None:
    reference = "127.0.0.1:5000/ns/mbw:h-cc"
    images = [{"RepoTags": [reference], "RepoDigests": ["127.0.0.1:5000/ns/mbw@sha256:short",
                                                        f"127.0.0.1:5000/ns/mbw@{DIGEST_B}",
                                                        f"127.0.0.1:5000/ns/mbw@{DIGEST_A}"]}]
    assert digest_references(images, [reference]) == {reference: f"127.0.0.1:5000/ns/mbw@{DIGEST_B}"}
    # What docker_image_info may hand over for an odd image: no tags, nulls, wrong shapes.
    odd: list[dict[str, object]] = [{}, {"RepoTags": None, "RepoDigests": None}, {"RepoTags": "x", "RepoDigests": "y"}]
    assert digest_references(odd, [reference]) == {}


@given(st.lists(st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True), min_size=1, max_size=6, unique=True))
def test_every_reference_found_keeps_its_repository_and_gets_its_own_digest(names: list[str]) -> None:
    references = [f"{ECR}/{name}:h-1" for name in names]
    digests = [f"sha256:{index:064x}" for index in range(len(names))]
    images = [{"RepoTags": [ref], "RepoDigests": [f"{ref.rsplit(':', 1)[0]}@{digest}"]}
              for ref, digest in zip(references, digests, strict=True)]
    out = digest_references(images, references)
    assert list(out) == references
    for ref, digest in zip(references, digests, strict=True):
        assert out[ref] == f"{ref.rsplit(':', 1)[0]}@{digest}"

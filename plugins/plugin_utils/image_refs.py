"""Image references: the content tag of a build, and what a built image is pushed as.

The roles build images under local names (`interference-orchestrator/povray:h-0123abcd4567`,
`interference-extender:h-...`); with `images_registry` set they push each one to
`<registry>/<last component of the name>:<tag>` and the cluster pulls that. The
grammar is the one of distribution's reference package (what Docker and
containerd accept): a registry host (with a dot or a port, or `localhost`, so
it is never mistaken for a Docker Hub namespace), then lowercase path components.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?$")
_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
EXAMPLE = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/interference"
# The two characters backslash and n, not a newline: the roles computed their
# tags in Jinja, where Ansible escapes the backslash of '\n' in a template read
# from YAML, so every image built so far was tagged over this separator. Kept so
# the same inputs keep their tags (a changed scheme would rebuild every image).
SEPARATOR = "\\n"


class ImageReferenceError(PlacementError):
    """A registry address or an image reference that cannot be pushed to."""


def check_registry(registry: str) -> str:
    """The registry address without a trailing slash; ImageReferenceError naming what is wrong."""
    value = str(registry).strip().rstrip("/")
    where = f"images_registry {str(registry)!r}"
    if "://" in value:
        raise ImageReferenceError(f"{where}: give it without a scheme, e.g. {EXAMPLE}")
    host, _, path = value.partition("/")
    if not host or not _HOST.match(host):
        raise ImageReferenceError(f"{where}: {host!r} is not a registry host[:port], e.g. {EXAMPLE}")
    if host != "localhost" and "." not in host and ":" not in host:
        raise ImageReferenceError(
            f"{where}: {host!r} would be read as a Docker Hub namespace; start with the registry host "
            f"(a name with a dot, a port, or localhost), e.g. docker.io/{host} or {EXAMPLE}"
        )
    for component in path.split("/") if path else []:
        if not _PATH_COMPONENT.match(component):
            raise ImageReferenceError(
                f"{where}: repository path component {component!r} must be lowercase letters and digits, "
                "separated by '.', '_' or '-'"
            )
    return value


def registry_reference(image: str, registry: str) -> str:
    """`image` (name:tag) as pushed to `registry`: <registry>/<last name component>:<tag>.

    An empty registry returns `image` unchanged (nothing is pushed). The tag is
    kept as it is: the roles' tags are content hashes, so a pushed tag names
    exactly one build. An empty tag (`name:`, a role default read before the
    role computed its tag, e.g. by argument validation) stays empty.
    """
    if not str(registry).strip():
        return image
    base = check_registry(registry)
    name, sep, tag = str(image).rpartition(":")
    if not sep or "/" in tag or (tag and not _TAG.match(tag)):
        raise ImageReferenceError(f"image {image!r}: needs a tag (name:tag) to be pushed to {base}")
    return f"{base}/{name.rsplit('/', 1)[-1]}:{tag}"


_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def digest_references(images: Iterable[Mapping[str, Any]], references: Iterable[str]) -> dict[str, str]:
    """Each pushed `references` entry (<registry>/<name>:<tag>) -> <registry>/<name>@sha256:<digest>.

    `images` is what the engine reports of its images (`docker image inspect`,
    community.docker.docker_image_info): a push records the digest the registry
    answered in the image's RepoDigests, as <repository>@sha256:<digest>. A
    reference whose image the engine does not hold, or which was never pushed
    to its repository (a check run before the first push), is left out: the
    caller keeps the tag there. Where one image holds several digests of one
    repository (pushed once as a Docker and once as an OCI manifest), the first
    the engine lists wins, as `docker inspect` shows it.
    """
    wanted = [str(reference) for reference in references]
    out: dict[str, str] = {}
    for image in images:
        tags = image.get("RepoTags") or []
        digests = image.get("RepoDigests") or []
        if not isinstance(tags, list) or not isinstance(digests, list):
            continue
        for reference in wanted:
            if reference in out or reference not in tags:
                continue
            repository = reference.rpartition(":")[0]
            for digested in digests:
                name, sep, digest = str(digested).partition("@")
                if sep and name == repository and _DIGEST.match(digest):
                    out[reference] = f"{repository}@{digest}"
                    break
    return out


def content_tag(
    files: Iterable[tuple[str, bytes]],
    prefix: str = "h-",
    length: int = 12,
    hashed: Iterable[tuple[str, str]] = (),
    extra: Iterable[str] = (),
) -> str:
    """A tag naming one build's inputs: prefix + the first `length` hex digits of a sha256.

    The sha256 is over these lines joined by SEPARATOR (nothing at the end):
    - one "<sha256 of the content> <name>" per (name, hex digest) of `hashed`, in
      the order given: files hashed elsewhere (the 72 MB plugin scheduler binary
      through `stat`, so it is never read into memory);
    - one "<sha256 of the content> <relative path>" per file of `files`, sorted
      by path, so an edited, added or renamed file gives a new tag and an
      unchanged tree the same one;
    - each line of `extra` as it is: what else the build depends on (the base
      image, the wheels' platforms, the workload an image runs).
    docs/architecture.md ("One content hash") describes the scheme for every image.
    """
    lines = [f"{digest} {name}" for name, digest in hashed]
    lines += [f"{hashlib.sha256(content).hexdigest()} {path}" for path, content in sorted(files)]
    lines += [str(line) for line in extra]
    return prefix + hashlib.sha256(SEPARATOR.join(lines).encode()).hexdigest()[:length]

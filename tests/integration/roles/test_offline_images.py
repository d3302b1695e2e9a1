"""The offline image path, without a cluster: where images come from and what they are called.

Through real ansible-playbook runs: the cluster_provider role resolving
`image_source` (a closed local port stands for a registry that does not
answer; a local HTTP server that answers /v2/ as a registry does, with 401 and
the Docker-Distribution-API-Version header, for one that does; a port that
only accepts connections, or an HTTP server that is no registry, for the
proxies and firewalls that must not pass for one), the pts_images role tagging the
Debian workloads, the kind config naming the resolved node image, and the
monitoring stage skipped offline with one line.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import playbook_json
from tests.support.playbook_json import REPO, run_playbook

DEBIAN_CONTEXT = REPO / "files" / "workloads"
WORKLOADS = {"pts/c-ray": "povray", "pts/compress-7zip": "7zip", "pts/mbw": "mbw", "pts/stressapptest": "stressapptest"}


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A port that accepts connections and never answers (a firewall or a proxy that holds them)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def http_server(status: int, headers: dict[str, str]) -> Iterator[str]:
    """Serve every GET with `status` and `headers` on a local port; yield the /v2/ URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v2/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def registry_url() -> Iterator[str]:
    """What Docker Hub's /v2/ answers without credentials."""
    yield from http_server(
        401, {"Docker-Distribution-API-Version": "registry/2.0", "WWW-Authenticate": 'Bearer realm="x"'}
    )


@pytest.fixture
def web_server_url() -> Iterator[str]:
    """An HTTP server that is no registry (a captive portal, a proxy's error page)."""
    yield from http_server(200, {"Content-Type": "text/html"})


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nobody listens once the socket closes


def resolve(tmp_path: Path, **extra: Any) -> tuple[str, str]:
    """Run cluster_provider's image_source.yml; return (resolved source, reason)."""
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "cluster_provider",
            "image_source",
            {
                "ansible.builtin.debug": {
                    "msg": "{{ [cluster_provider_image_source, cluster_provider_image_source_reason] }}"
                }
            },
        ),
        {"cluster_provider_resolved": "kind", **extra},
    )
    assert run.returncode == 0, run.report
    source, reason = run.messages()[-2:]
    return source, reason


def test_auto_builds_offline_when_the_registry_does_not_answer(tmp_path: Path, closed_port: int) -> None:
    source, reason = resolve(
        tmp_path, cluster_provider_registry_probe={"url": f"http://127.0.0.1:{closed_port}/v2/", "timeout": 2}
    )
    assert source == "offline"
    assert reason.startswith(f"auto: no image registry answers (http://127.0.0.1:{closed_port}/v2/: ")
    assert "built here" in reason


def test_auto_pulls_when_the_registry_answers(tmp_path: Path, registry_url: str) -> None:
    source, reason = resolve(tmp_path, cluster_provider_registry_probe={"url": registry_url, "timeout": 2})
    assert (source, reason) == ("registry", f"auto: the registry answers ({registry_url})")


def test_a_port_that_only_accepts_connections_is_no_registry(tmp_path: Path, listening_port: int) -> None:
    # The probe used to be a TCP connection: a firewall or a proxy that accepts it passed for the
    # registry, and kind then tried to pull kindest/node from nowhere.
    url = f"http://127.0.0.1:{listening_port}/v2/"
    source, reason = resolve(tmp_path, cluster_provider_registry_probe={"url": url, "timeout": 1})
    assert source == "offline"
    assert reason.startswith(f"auto: no image registry answers ({url}: ")
    assert "built here" in reason


def test_a_web_server_that_is_no_registry_is_no_registry(tmp_path: Path, web_server_url: str) -> None:
    source, reason = resolve(tmp_path, cluster_provider_registry_probe={"url": web_server_url, "timeout": 2})
    assert source == "offline"
    assert reason.startswith(
        f"auto: no image registry answers ({web_server_url}: HTTP 200 without a Docker-Distribution-API-Version"
    )


@pytest.mark.parametrize("forced", ["registry", "offline"])
def test_a_set_image_source_wins_over_the_probe(tmp_path: Path, closed_port: int, forced: str) -> None:
    source, reason = resolve(
        tmp_path,
        image_source=forced,
        cluster_provider_registry_probe={"url": f"http://127.0.0.1:{closed_port}/v2/", "timeout": 2},
    )
    assert (source, reason) == (forced, f"image_source is set to {forced}")


def test_kwok_runs_no_images_so_the_registry_is_not_asked(tmp_path: Path, closed_port: int) -> None:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "cluster_provider",
            "image_source",
            {"ansible.builtin.debug": {"msg": "{{ cluster_provider_image_source }}"}},
        ),
        {
            "cluster_provider_resolved": "kwok",
            "cluster_provider_registry_probe": {"url": f"http://127.0.0.1:{closed_port}/v2/", "timeout": 2},
        },
    )
    assert run.returncode == 0, run.report
    assert run.messages()[-1] == "registry"
    (probe,) = run.results("Ask whether the image registry answers")
    assert probe.get("skipped")


def test_an_existing_cluster_is_offline_too_when_no_registry_answers(tmp_path: Path, closed_port: int) -> None:
    # The workload images are built here for it (with images_registry) and the chart comes from the internet.
    source, reason = resolve(
        tmp_path,
        cluster_provider_resolved="existing",
        cluster_provider_registry_probe={"url": f"http://127.0.0.1:{closed_port}/v2/", "timeout": 2},
    )
    assert source == "offline"
    assert reason.startswith(f"auto: no image registry answers (http://127.0.0.1:{closed_port}/v2/: ")
    assert reason.endswith("so the workload images are built here from Go modules and Debian packages")


@pytest.mark.parametrize(
    ("registry", "problem"),
    [("https://reg.example.com/x", "give it without a scheme"), ("myuser", "Docker Hub namespace")],
)
def test_a_bad_images_registry_stops_the_run_before_anything_is_built(
    tmp_path: Path, closed_port: int, registry: str, problem: str
) -> None:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play("cluster_provider", "image_source"),
        {
            "cluster_provider_resolved": "existing",
            "images_registry": registry,
            "cluster_provider_registry_probe": {"url": f"http://127.0.0.1:{closed_port}/v2/", "timeout": 1},
        },
    )
    assert run.returncode != 0
    (failed,) = run.results("Check the image registry address")
    assert f"images_registry '{registry}': " in failed["msg"] and problem in failed["msg"]
    assert "Traceback" not in failed["msg"]


def debian_refs(tmp_path: Path, **extra: Any) -> dict[str, str]:
    run = run_playbook(
        tmp_path,
        playbook_json.role_play(
            "pts_images", "tags", {"ansible.builtin.debug": {"msg": "{{ pts_images_refs | to_json }}"}}
        ),
        {"cluster_provider_image_source": "offline", **extra},
    )
    assert run.returncode == 0, run.report
    return dict(json.loads(run.messages()[-1]))


def test_offline_the_apps_images_become_the_debian_workloads_under_their_own_names(tmp_path: Path) -> None:
    refs = debian_refs(tmp_path)
    assert list(refs) == list(WORKLOADS)
    for test, ref in refs.items():
        assert re.fullmatch(rf"interference-orchestrator/{WORKLOADS[test]}:h-[0-9a-f]{{12}}", ref), ref
    # The apps shipped in group_vars name exactly these images.
    apps = yaml.safe_load((REPO / "examples" / "testbed" / "group_vars" / "all" / "apps.yml").read_text())["apps"]
    assert sorted(app["image"] for app in apps) == sorted(refs)


def test_the_debian_base_packages_and_context_are_inputs_of_every_tag(tmp_path: Path) -> None:
    before = debian_refs(tmp_path)
    assert debian_refs(tmp_path) == before
    fewer = debian_refs(tmp_path, pts_images_debian_packages=["mbw", "stressapptest", "7zip", "povray", "bash"])
    assert all(fewer[test] != before[test] for test in before)
    context = tmp_path / "context"
    context.mkdir()
    for name in ("Dockerfile", "run-benchmark"):
        (context / name).write_text((DEBIAN_CONTEXT / name).read_text() + "\n# edited\n")
    edited = debian_refs(tmp_path, pts_images_debian_context_dir=str(context))
    assert all(edited[test] != before[test] for test in before)


def test_the_pts_source_is_unchanged_by_the_offline_one(tmp_path: Path) -> None:
    refs = debian_refs(tmp_path, pts_images_source="pts")
    assert all(ref.startswith(test + ":h-") for test, ref in refs.items())


def test_kind_config_names_the_resolved_node_image_on_every_node(tmp_path: Path) -> None:
    config = tmp_path / "kind.yaml"
    run = run_playbook(
        tmp_path,
        playbook_json.role_play("kind_cluster", "config"),
        {
            "kind_cluster_config_path": str(config),
            "kind_cluster_node_image_resolved": "interference-orchestrator/kind-node:v1.34.4-h0123456789ab",
            "cluster_workers": 2,
        },
    )
    assert run.returncode == 0, run.report
    nodes = yaml.safe_load(config.read_text())["nodes"]
    assert [node["role"] for node in nodes] == ["control-plane", "worker", "worker"]
    assert {node["image"] for node in nodes} == {"interference-orchestrator/kind-node:v1.34.4-h0123456789ab"}


def test_kind_config_leaves_kinds_default_image_when_images_come_from_the_registry(tmp_path: Path) -> None:
    config = tmp_path / "kind.yaml"
    run = run_playbook(
        tmp_path,
        playbook_json.role_play("kind_cluster", "config"),
        {"kind_cluster_config_path": str(config), "kind_cluster_node_image_resolved": ""},
    )
    assert run.returncode == 0, run.report
    assert all("image" not in node for node in yaml.safe_load(config.read_text())["nodes"])

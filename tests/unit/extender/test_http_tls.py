"""HTTPS with client certificates: only the scheduler's certificate may call filter, prioritize and bind.

A real TLS server on a free port of 127.0.0.1 (the one the extender runs), a
throwaway CA made in the test; the kubelet's probes (no certificate) still
reach /healthz and /readyz.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from interference_extender.cluster_view import ClusterView
from interference_extender.server import ExtenderHTTPServer, ServerLimits, client_auth
from tests.support.extender_http import address, running_server
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise
from tests.support.tls import CertificateAuthority

SCHEDULER = "interference-scheduler"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority(folder, "extender-ca")
    other_ca = CertificateAuthority(folder / "elsewhere", "someone-elses-ca")
    server_cert, server_key = ca.issue("interference-extender", server=True)
    client_cert, client_key = ca.issue(SCHEDULER)
    stranger_cert, stranger_key = ca.issue("a-pod-in-default")
    forged_cert, forged_key = other_ca.issue(SCHEDULER)
    return {"ca": ca.path, "server_cert": server_cert, "server_key": server_key,
            "client_cert": client_cert, "client_key": client_key,
            "stranger_cert": stranger_cert, "stranger_key": stranger_key,
            "forged_cert": forged_cert, "forged_key": forged_key}


@pytest.fixture(scope="module")
def server(pki: dict[str, Path]) -> Iterator[ExtenderHTTPServer]:
    view = ClusterView()
    view.replace_nodes(serialise([make_node("a"), make_node("b")]))
    tls = client_auth(str(pki["server_cert"]), str(pki["server_key"]), str(pki["ca"]), frozenset({SCHEDULER}))
    with running_server(ServerLimits(request_timeout=2.0), view, tls=tls) as running:
        yield running


def https(
    server: ExtenderHTTPServer, pki: dict[str, Path], method: str, path: str, client: str | None
) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    if client is not None:
        context.load_cert_chain(str(pki[f"{client}_cert"]), str(pki[f"{client}_key"]))
    conn = http.client.HTTPSConnection(*address(server), timeout=10, context=context)
    body = json.dumps(extender_args(make_pod("p", pod_type="cpu"), [make_node("a"), make_node("b")], True)).encode()
    conn.request(method, path, body=body if method == "POST" else None)
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, text


def test_the_schedulers_certificate_may_prioritize(server: ExtenderHTTPServer, pki: dict[str, Path]) -> None:
    status, body = https(server, pki, "POST", "/prioritize", "client")
    assert status == 200, body
    assert {entry["Host"] for entry in json.loads(body)} == {"a", "b"}


@pytest.mark.parametrize("path", ["/filter", "/prioritize", "/bind"])
def test_no_client_certificate_is_refused_for_the_scheduler_paths(
    server: ExtenderHTTPServer, pki: dict[str, Path], path: str
) -> None:
    status, body = https(server, pki, "POST", path, None)
    assert status == 403
    assert "the caller sent no client certificate" in json.loads(body)["error"]


def test_a_certificate_of_the_ca_with_another_name_is_refused(server: ExtenderHTTPServer, pki: dict[str, Path]) -> None:
    status, body = https(server, pki, "POST", "/bind", "stranger")
    assert status == 403
    assert "the caller sent a-pod-in-default" in json.loads(body)["error"]


def test_a_certificate_of_another_ca_fails_the_handshake(server: ExtenderHTTPServer, pki: dict[str, Path]) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError)):
        https(server, pki, "POST", "/bind", "forged")
    assert https(server, pki, "GET", "/healthz", None)[0] == 200  # the server is still there


def test_probes_need_no_client_certificate(server: ExtenderHTTPServer, pki: dict[str, Path]) -> None:
    assert https(server, pki, "GET", "/healthz", None) == (200, "ok\n")
    assert https(server, pki, "GET", "/readyz", None)[0] == 200


def test_plain_http_on_the_https_port_gets_no_answer(server: ExtenderHTTPServer, pki: dict[str, Path]) -> None:
    with socket.create_connection(address(server), timeout=10) as sock:
        sock.sendall(b"POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        try:
            answer = sock.recv(4096)
        except ConnectionResetError:
            answer = b""
        assert not answer.startswith(b"HTTP/")
    assert https(server, pki, "GET", "/healthz", None)[0] == 200

"""Overload benchmark of the extender's HTTP server (figures for docs/extender.md; not a test).

Parts (all by default, or name them):
  connections  `--clients` clients (2,000) open a connection each at the same moment and send one
               prioritize request; per request the latency from connect to the last byte of the
               answer, the count per status (or error), the server's peak thread count. Meanwhile
               one keep-alive client sends the same request over and over, as kube-scheduler does:
               its latency is what scheduling sees during the storm.
  memory       peak RSS growth of the server per byte of request body, one request at a time
               (bodies of 4 and 16 MiB, each verb), for a realistic body (kubelet-like nodes) and
               the costliest shapes found: the parse overhead that docs/extender.md multiplies
               the body budget by (server.PARSE_OVERHEAD).

The server is `scripts/extender` in its own process, without a cluster (an empty view: the work is
the HTTP, the JSON decoding and the decision over the nodes in the body). Extra server arguments go
after `--server-arg=`, e.g. `--server-arg=--max-connections=64`; `--extender-root DIR` runs the
extender of another tree (`git archive main interference_extender plugins scripts collections` with a
`.venv` link) for a before/after comparison on the same machine state.

Run: PYTHONPATH=collections:. .venv/bin/python benchmarks/extender_overload.py [connections|memory]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.extender import percentile
from tests.support.k8s_objects import extender_args, make_node, make_pod
from tests.support.kwok import free_port, http_status, wait_for

REPO = Path(__file__).resolve().parents[1]

MIB = 1024 * 1024
CLIENT_TIMEOUT_SECONDS = 60.0
MEMORY_BODY_MIB = (4, 16)


def proc_status(pid: int, field: str) -> int:
    """One number of /proc/PID/status (`Threads`, `VmHWM` in KiB, ...)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


@contextmanager
def extender(
    extra_args: Sequence[str], log: Path, root: Path = REPO
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`scripts/extender` of `root` on a free port, answering /healthz: (port, process); stopped on exit."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(root / "scripts" / "extender"), "--listen", f"127.0.0.1:{port}", *extra_args],
            stdout=out, stderr=subprocess.STDOUT, cwd=root,  # `python -m` imports from the working folder first
        )
    try:
        listen = f"127.0.0.1:{port}"
        wait_for("the extender to answer", lambda: process.poll() is not None or http_status(listen, "/healthz") == 200)
        if process.poll() is not None:
            raise RuntimeError(log.read_text())
        yield port, process
    finally:
        process.terminate()
        process.wait(timeout=30)


def full_list_body(node_count: int, verb_pod: str = "p") -> bytes:
    nodes = [make_node(f"node-{i:05d}", zone=f"zone-{i % 3}") for i in range(node_count)]
    return json.dumps(extender_args(make_pod(verb_pod, pod_type="cpu", app="a"), nodes, False)).encode()


def request_bytes(path: str, body: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: extender\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def one_request(port: int, payload: bytes) -> tuple[str, float, float]:
    """Connect, send, read the whole answer: (status code or error name, seconds to connect, seconds in all)."""
    started = time.perf_counter()
    connected = started
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), CLIENT_TIMEOUT_SECONDS)
        connected = time.perf_counter()
        writer.write(payload)
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLIENT_TIMEOUT_SECONDS)
        lines = head.decode("latin-1").split("\r\n")
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        await asyncio.wait_for(reader.readexactly(length), CLIENT_TIMEOUT_SECONDS)
        status = lines[0].split()[1]
    except (TimeoutError, OSError, asyncio.IncompleteReadError, StopIteration, ValueError) as exc:
        status = type(exc).__name__
    finally:
        if writer is not None:
            writer.close()
    return status, connected - started, time.perf_counter() - started


async def _storm(port: int, payload: bytes, clients: int) -> list[tuple[str, float, float]]:
    return list(await asyncio.gather(*(one_request(port, payload) for _ in range(clients))))


def storm(port: int, payload: bytes, clients: int) -> list[tuple[str, float, float]]:
    """The storm's requests, from an event loop in a process of its own (spawned from this module)."""
    return asyncio.run(_storm(port, payload, clients))


def latency_summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(samples, 0.50) * 1000, 1),
        "p99_ms": round(percentile(samples, 0.99) * 1000, 1),
        "max_ms": round(max(samples) * 1000, 1),
    }


def bench_connections(clients: int, extra_args: Sequence[str], workdir: Path, root: Path) -> dict[str, Any]:
    body = full_list_body(10)
    payload = request_bytes("/prioritize", body)
    with extender(extra_args, workdir / "connections.log", root) as (port, process):
        peak_threads = proc_status(process.pid, "Threads")
        done = threading.Event()
        scheduler: list[tuple[int, float, float]] = []  # (status, started at, seconds)

        def sample_threads() -> None:
            nonlocal peak_threads
            while not done.wait(0.02):
                peak_threads = max(peak_threads, proc_status(process.pid, "Threads"))

        def keep_alive_client() -> None:
            # Opened before the storm, as kube-scheduler's connections are.
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT_SECONDS)
            while not done.is_set():
                sent_at = time.perf_counter()
                try:
                    conn.request("POST", "/prioritize", body=body)
                    response = conn.getresponse()
                    response.read()
                    scheduler.append((response.status, sent_at, time.perf_counter() - sent_at))
                except OSError:
                    scheduler.append((0, sent_at, time.perf_counter() - sent_at))
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT_SECONDS)
            conn.close()

        # The storm's client in its own process, so the keep-alive client here
        # competes with it for the CPU, not for this interpreter's lock.
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            pool.apply(time.sleep, (0,))  # started before the clock
            watchers = [threading.Thread(target=sample_threads), threading.Thread(target=keep_alive_client)]
            for thread in watchers:
                thread.start()
            time.sleep(0.5)
            started = time.perf_counter()
            results = pool.apply(storm, (port, payload, clients))
            wall = time.perf_counter() - started
        done.set()
        for thread in watchers:
            thread.join()
        during = [(status, seconds) for status, at, seconds in scheduler if started <= at <= started + wall]
    statuses = Counter(status for status, _, _ in results)
    row = {
        "part": "connections",
        "extender_root": str(root),
        "clients": clients,
        "body_bytes": len(body),
        "server_args": list(extra_args),
        "wall_s": round(wall, 2),
        "statuses": dict(sorted(statuses.items())),
        "all": latency_summary([seconds for _, _, seconds in results]),
        "connect": latency_summary([seconds for _, seconds, _ in results]),
        # From the connection to the answer's last byte: the server's share, without the client's own start-up.
        "after_connect": latency_summary([total - connect for _, connect, total in results]),
        "answered_200": latency_summary([s for status, _, s in results if status == "200"] or [0.0]),
        "answered_503": latency_summary([s for status, _, s in results if status == "503"] or [0.0]),
        "peak_threads": peak_threads,
        "keep_alive_client_during_the_storm": {
            "requests": len(during),
            "statuses": dict(Counter(str(status) for status, _ in during)),
            **latency_summary([seconds for _, seconds in during] or [0.0]),
        },
    }
    print(json.dumps(row), flush=True)
    return row


def memory_bodies(mib: int) -> dict[str, bytes]:
    """Request bodies of about `mib` MiB, by shape: a realistic one and the costliest ones found."""
    size = mib * MIB
    node_bytes = (len(full_list_body(101)) - len(full_list_body(1))) / 100
    named = b'{"metadata":{"name":"n0000000"}},'
    return {
        # Kubelet-like nodes (2.9 KiB each), as kube-scheduler sends them without nodeCacheCapable.
        "kubelet-like nodes": full_list_body(int(size / node_bytes)),
        # A field nobody reads, holding empty lists: 3 bytes of JSON per list object.
        "empty lists": b'{"Pod":{"spec":{"x":[' + b"[]," * (size // 3) + b'[]]}},"NodeNames":["a"]}',
        # The same with lists of one empty list: 5 bytes per two list objects.
        "nested lists": b'{"Pod":{"spec":{"x":[' + b"[[]]," * (size // 5) + b'[]]}},"NodeNames":["a"]}',
        # Nodes with a name only: each becomes facts, a candidate tuple and an echoed object.
        "named nodes only": b'{"Pod":{},"Nodes":{"items":[' + named * (size // len(named)) + named[:-1] + b"]}}",
    }


def bench_memory(extra_args: Sequence[str], workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for mib in MEMORY_BODY_MIB:
        for shape, body in memory_bodies(mib).items():
            args = ["--max-body-bytes", str(len(body)), "--body-budget-bytes", str(len(body)), *extra_args]
            for verb in ("prioritize", "filter"):
                with extender(args, workdir / f"memory-{mib}.log") as (port, process):
                    before = proc_status(process.pid, "VmHWM")
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                    conn.request("POST", f"/{verb}", body=body)
                    response = conn.getresponse()
                    answer = response.read()
                    after = proc_status(process.pid, "VmHWM")
                row = {
                    "part": "memory",
                    "shape": shape,
                    "verb": verb,
                    "body_mib": round(len(body) / MIB, 1),
                    "status": response.status,
                    "answer_mib": round(len(answer) / MIB, 1),
                    "rss_before_mib": round(before / 1024, 1),
                    "rss_peak_mib": round(after / 1024, 1),
                    "growth_per_body_byte": round((after - before) * 1024 / len(body), 1),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parts = ["connections", "memory"]
    parser.add_argument("parts", nargs="*", default=parts, choices=parts)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--server-arg", action="append", default=[], help="extra argument of scripts/extender")
    parser.add_argument("--extender-root", type=Path, default=REPO, help="tree whose scripts/extender runs")
    parser.add_argument("--rounds", type=int, default=1, help="connections: runs, one after the other")
    parser.add_argument("--out", type=Path, help="also write the rows here (JSON)")
    args = parser.parse_args(argv)
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"extender-overload-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    if "connections" in args.parts:
        rows.extend(
            bench_connections(args.clients, args.server_arg, workdir, args.extender_root) for _ in range(args.rounds)
        )
    if "memory" in args.parts:
        rows.extend(bench_memory(args.server_arg, workdir))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

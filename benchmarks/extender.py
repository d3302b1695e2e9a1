"""Benchmark of the scheduler extender (figures for docs/extender.md; not a test).

Parts (all by default, or name them):
  decisions  filter + prioritize answered in-process (JSON decode, decision, JSON encode),
             p50/p99 at 10, 100 and 1,000 nodes, full node list and nodeCacheCapable.
  http       the same over real HTTP keep-alive connections, server pinned to one core,
             for each server stack (stdlib ThreadingHTTPServer, aiohttp), plus requests/s.
  kwok       a kwok cluster with the real kube-scheduler: pods/s bound by a scheduler
             with the extender versus the same scheduler without it, same pods, same run,
             rounds alternated (--kwok-arms adds "with extender (kube-scheduler binds)":
             the extender without bindVerb, to show what binding through it costs).

Run: PYTHONPATH=collections:. .venv/bin/python benchmarks/extender.py [decisions|http|kwok ...]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from interference_extender.cluster_view import ClusterView
from interference_extender.policy import ExtenderPolicy
from interference_extender.service import ExtenderService, tune_interpreter
from tests.support.k8s_objects import extender_args, make_node, make_pod, serialise

REPO = Path(__file__).resolve().parents[1]

# Raw rows of the kwok part (filter + prioritize, or prioritize only with --no-filter).
KWOK_RESULTS = {True: REPO / "benchmarks" / "results" / "extender_kwok.json",
                False: REPO / "benchmarks" / "results" / "extender_kwok_prioritize_only.json"}
SIZES = (10, 100, 1000)
PODS_PER_NODE = 10
ZONES = ("zone-a", "zone-b", "zone-c")


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cluster_objects(node_count: int) -> tuple[list[Any], list[Any]]:
    """Nodes (a tenth with GPUs, three zones) and PODS_PER_NODE typed pods of 50 apps on each."""
    nodes = [
        make_node(f"node-{i:04d}", gpus=4 if i % 10 == 0 else 0, gpu_memory="81920" if i % 10 == 0 else None,
                  zone=ZONES[i % len(ZONES)])
        for i in range(node_count)
    ]
    pods = [
        make_pod(f"pod-{i}-{j}", pod_type=("cpu", "memory")[(i + j) % 2], app=f"app-{(i * PODS_PER_NODE + j) % 50}",
                 node_name=f"node-{i:04d}")
        for i in range(node_count)
        for j in range(PODS_PER_NODE)
    ]
    return nodes, pods


def service_for(node_count: int) -> tuple[ExtenderService, list[Any]]:
    nodes, pods = cluster_objects(node_count)
    view = ClusterView()
    view.replace_nodes(serialise(nodes))
    view.replace_pods(serialise(pods))
    service = ExtenderService(view, ExtenderPolicy())
    tune_interpreter()  # as the service does once started
    return service, nodes


def request_bodies(nodes: list[Any], node_cache_capable: bool) -> bytes:
    pod = make_pod("incoming", pod_type="cpu", app="app-7")
    return json.dumps(extender_args(pod, nodes, node_cache_capable)).encode()


def measure(call: Callable[[], None], rounds: int) -> dict[str, float]:
    """Latency of `call` (ms) over `rounds` runs after a warm-up."""
    for _ in range(max(3, rounds // 10)):
        call()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2), "p99_ms": round(percentile(samples, 0.99), 2)}


def rounds_for(node_count: int) -> int:
    return {10: 2000, 100: 1000}.get(node_count, 200)


def bench_decisions() -> list[dict[str, Any]]:
    rows = []
    for size in SIZES:
        service, nodes = service_for(size)
        for cache in (False, True):
            body = request_bodies(nodes, cache)

            def decide(body: bytes = body, service: ExtenderService = service) -> None:
                for verb in ("/filter", "/prioritize"):
                    response = service.answer("POST", verb, body)
                    assert response.status == 200, response.body

            row = {"part": "decisions", "nodes": size, "mode": "nodeCacheCapable" if cache else "full-node-list",
                   "body_kib": round(len(body) / 1024, 1), **measure(decide, rounds_for(size))}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


# -- HTTP


def _serve(stack: str, size: int, port: int, ready: Any) -> None:
    # One process: the GIL keeps the service on one core at a time, which is the
    # "one core" of the figures (pinning to a fixed core measured the neighbours'
    # load on this shared machine instead).
    service, _ = service_for(size)
    if stack == "stdlib":
        from interference_extender.server import ServerLimits, serve

        largest = 64 * 1024 * 1024  # every body of the figures, as aiohttp takes them
        server = serve(service, "127.0.0.1", port, ServerLimits(max_body_bytes=largest, body_budget_bytes=largest))
        ready.set()
        server.serve_forever()
    else:
        import asyncio

        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            response = service.answer(request.method, request.path, await request.read())
            return web.Response(status=response.status, body=response.body,
                                headers={"Content-Type": response.content_type})

        async def main() -> None:
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", handle)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            ready.set()
            await asyncio.Event().wait()

        asyncio.run(main())


def _post(conn: http.client.HTTPConnection, path: str, body: bytes) -> None:
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    assert response.status == 200, response.status


def bench_http(stacks: Sequence[str]) -> list[dict[str, Any]]:
    from tests.support.kwok import free_port

    rows = []
    context = multiprocessing.get_context("fork")
    for stack in stacks:
        for size in SIZES:
            port = free_port()
            ready = context.Event()
            server = context.Process(target=_serve, args=(stack, size, port, ready), daemon=True)
            server.start()
            ready.wait(120)
            _, nodes = cluster_objects(size)
            try:
                for cache in (False, True):
                    body = request_bodies(nodes, cache)
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

                    def decide(conn: http.client.HTTPConnection = conn, body: bytes = body) -> None:
                        _post(conn, "/filter", body)
                        _post(conn, "/prioritize", body)

                    row: dict[str, Any] = {"part": "http", "stack": stack, "nodes": size,
                                           "mode": "nodeCacheCapable" if cache else "full-node-list",
                                           **measure(decide, rounds_for(size) // 2)}
                    conn.close()
                    if cache and size == 100:
                        row["requests_per_s"] = round(_throughput(port, body), 1)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            finally:
                server.terminate()
                server.join()
    return rows


def _throughput(port: int, body: bytes, clients: int = 4, seconds: float = 5.0) -> float:
    """Requests/s the server (one core) answers to `clients` keep-alive connections."""
    counts = [0] * clients
    stop = time.monotonic() + seconds

    def run(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop:
            _post(conn, "/prioritize", body)
            counts[index] += 1
        conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.monotonic() - started)


# -- kwok


ARMS = {
    # label: (the extender is called, the extender binds)
    "without extender": (False, False),
    "with extender": (True, True),
    "with extender (kube-scheduler binds)": (True, False),
}


def bench_kwok(node_count: int, pod_count: int, rounds: int, with_filter: bool,
               arms: Sequence[str]) -> list[dict[str, Any]]:
    from tests.support import kwok

    workdir = Path(tempfile.mkdtemp(prefix="extender-bench-"))
    listen = f"127.0.0.1:{kwok.free_port()}"
    kwok.render_scheduler_config(workdir, listen, {"scheduler_extender_filter": with_filter})
    policy = workdir / "policy.yml"
    # The extender's policy decides for the role's scheduler name only: the runs with the
    # extender use it, so the extender really scores (and binds) their pods.
    decided_name = "interference-scheduler"
    cluster = kwok.KwokCluster(name=f"ext-bench-{kwok.free_port()}", workdir=workdir,
                               create_args=("--disable-qps-limits", "--disable", "kube-scheduler"))
    cluster.create()
    rows: list[dict[str, Any]] = []
    header = {"nodes": node_count, "pods": pod_count, "rounds": rounds, "filter": with_filter, "arms": list(arms),
              "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cores": os.cpu_count()}
    extender = None
    try:
        api = cluster.api()
        kwok.create_nodes(api, [make_node(f"n{i:03d}", zone=ZONES[i % len(ZONES)]) for i in range(node_count)])
        extender = kwok.start_extender(cluster.kubeconfig, listen, policy, workdir / "extender.log")
        # Alternate the schedulers, round after round: this machine's load drifts,
        # and a drift must not land on one side only. Medians per side are compared.
        for round_index in range(rounds):
            for label in arms:
                called, binds = ARMS[label]
                prefix = f"bench-{round_index}-" + re.sub(r"[^a-z0-9]+", "-", label).strip("-")
                profile = decided_name if called else prefix
                url = f"http://{listen}" if called else None
                config = kwok.write_scheduler_config(workdir / f"{prefix}.json", cluster.kubeconfig, profile, url,
                                                     extender_binds=binds)
                for i in range(pod_count):
                    kwok.create_pod(api, make_pod(f"{prefix}-{i}", pod_type=("cpu", "memory")[i % 2],
                                                  app=f"app-{i % 20}", scheduler_name=profile))
                before = _extender_sums(kwok, listen)
                load_before = os.getloadavg()[0]
                listed = json.loads(api.list_namespaced_pod("default", limit=1, _preload_content=False).data)
                # Bindings seen by a watch started before the scheduler (the previous run's pods are gone).
                watcher = kwok.BindingWatch(api, "default", listed["metadata"]["resourceVersion"], pod_count, 600)
                watcher.start()
                scheduler = cluster.start_scheduler(config, workdir / f"{prefix}.log")
                watcher.join()
                kwok.stop(scheduler)
                times = sorted(t for t, _ in watcher.seen.values())
                rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
                row: dict[str, Any] = {"part": "kwok", "round": round_index, "scheduler": label,
                                       "nodes": node_count, "pods": pod_count, "bound": len(times),
                                       "pods_per_s": round(rate, 1), "load_1m_before": round(load_before, 2),
                                       "load_1m_after": round(os.getloadavg()[0], 2)}
                if called:
                    # Time spent inside the extender per call (its own histogram), this run only.
                    after = _extender_sums(kwok, listen)
                    for verb, (total, calls) in after.items():
                        if calls > before[verb][1]:
                            mean = (total - before[verb][0]) / (calls - before[verb][1])
                            row[f"extender_{verb}_mean_ms"] = round(1000 * mean, 3)
                print(json.dumps(row), flush=True)
                rows.append(row)
                # Raw rows first (after every run: an interrupted benchmark keeps what it measured).
                _write_kwok_results(header, rows)
                api.delete_collection_namespaced_pod("default", grace_period_seconds=0)
                kwok.wait_for("pods to be deleted", lambda: not api.list_namespaced_pod("default").items, timeout=300)
    finally:
        if extender is not None:
            kwok.stop(extender)
        cluster.delete()
    without_rate = statistics.median(r["pods_per_s"] for r in rows if r["scheduler"] == "without extender")
    summaries = []
    for label in arms[1:]:
        with_rate = statistics.median(r["pods_per_s"] for r in rows if r["scheduler"] == label)
        summaries.append({"part": "kwok", "rounds": rounds, "filter": with_filter, "arm": label,
                          "median_pods_per_s_without": without_rate, "median_pods_per_s_with": with_rate,
                          "throughput_ratio": round(with_rate / without_rate, 2) if without_rate else None})
        print(json.dumps(summaries[-1]), flush=True)
    _write_kwok_results(header, rows, summaries)
    return [*rows, *summaries]


def _write_kwok_results(header: dict[str, Any], rows: list[dict[str, Any]],
                        summaries: list[dict[str, Any]] | None = None) -> None:
    path = KWOK_RESULTS[header["filter"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**header, "rows": rows, "summaries": summaries or []}, indent=1) + "\n")


def _extender_sums(kwok: Any, listen: str) -> dict[str, tuple[float, float]]:
    """(seconds, calls) the extender's latency histogram holds per verb so far."""
    series = "interference_extender_request_duration_seconds"
    return {
        verb: (kwok.metric(listen, f'{series}_sum{{verb="{verb}"}}') or 0.0,
               kwok.metric(listen, f'{series}_count{{verb="{verb}"}}') or 0.0)
        for verb in ("filter", "prioritize", "bind")
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parts = ["decisions", "http", "kwok"]
    parser.add_argument("parts", nargs="*", default=parts, choices=parts)
    parser.add_argument("--stacks", default="stdlib,aiohttp", help="HTTP server stacks to compare")
    parser.add_argument("--kwok-nodes", type=int, default=100)
    parser.add_argument("--kwok-pods", type=int, default=300)
    parser.add_argument("--kwok-rounds", type=int, default=3, help="runs of each scheduler, alternated")
    parser.add_argument("--no-filter", action="store_true", help="kwok: prioritize only (role: filter false)")
    parser.add_argument("--kwok-arms", default="without extender,with extender",
                        help=f"kwok: comma-separated schedulers to alternate, of: {', '.join(ARMS)}"
                             " (the first must be 'without extender', the reference)")
    args = parser.parse_args(argv)
    # A SIGTERM (timeout, Ctrl-C of a wrapper) still runs the clean-ups: no cluster left behind.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if "decisions" in args.parts:
        bench_decisions()
    if "http" in args.parts:
        bench_http(args.stacks.split(","))
    if "kwok" in args.parts:
        arms = [arm.strip() for arm in args.kwok_arms.split(",") if arm.strip()]
        if arms[:1] != ["without extender"] or not set(arms) <= set(ARMS):
            parser.error(f"--kwok-arms: 'without extender' first, then some of {list(ARMS)[1:]}")
        bench_kwok(args.kwok_nodes, args.kwok_pods, args.kwok_rounds, not args.no_filter, arms)
    return 0


if __name__ == "__main__":
    sys.exit(main())

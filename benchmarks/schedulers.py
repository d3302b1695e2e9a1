"""kube-scheduler with and without interference awareness, on one kwok cluster in one run.

Schedulers (each a fresh process per run, pods created before it starts so it
meets them as one burst):
  kube-scheduler   the plain binary, default plugins;
  anti-affinity    the same, pods carry a preferred podAntiAffinity (weight 100,
                   hostname) against pods of their own type label;
  extender         the same binary calling the HTTP extender (scripts/extender);
  plugins          gpu-scheduler of the tools folder, the scheduler_plugins role's profile.

Pod mixes (each on its own nodes, kept there by a nodeSelector):
  one-hot   half `type: cpu`, half `type: memory` pods on equal nodes;
  mixed     random pressure profiles (annotation interference.orchestrator/profile,
            type label = dominant resource) with CPU requests of 1 or 2 cores on
            nodes of two sizes (4 and 16 cores) filled to 75 %, so capacity binds.

Per run: throughput (pods/s between the first and last binding seen by a
watch started before the scheduler), p50/p99 of the scheduler's own
scheduler_scheduling_attempt_duration_seconds (result=scheduled) and of
scheduler_pod_scheduling_sli_duration_seconds, and the total interference of
the placement against the engine's lower bound (interference_lower_bound,
which relaxes capacity). Rounds alternate the schedulers, so a drift in this
shared machine's load does not land on one side; medians per scheduler are
compared. Each row records the machine's load average (1 min) before and after.

At the issue's size (1,000 nodes, 5,000 pods per mix) the cluster must not be
the bottleneck: kwokctl runs without its own kube-scheduler and without QPS
limits (--disable-qps-limits: API server inflight limits and
kube-controller-manager QPS), each mix's nodes exist only while that mix runs,
bindings are seen by one watch (not by listing every pod again), and a row's
pods go with deletecollection at grace period 0 (deleting the namespace instead
left it to kube-controller-manager, pod by pod: 1,000 pods did not go in 15
minutes).

Raw rows go to benchmarks/results/schedulers.json first; the table is derived
from that file only (--table re-prints it).

The ratio that can be quoted is per round: each scheduler's pods/s over plain
kube-scheduler's in the same round (same cluster, minutes apart), reported as
the median and the spread (min-max) over at least 5 rounds, next to the load
average sampled during each run (`load_1m_during`).

Run: PYTHONPATH=collections:. .venv/bin/python benchmarks/schedulers.py [--nodes 1000 --pods 5000 --rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ansible_collections.interference.orchestrator.plugins.module_utils.contract import PROFILE_ANNOTATION, TYPE_LABEL
from ansible_collections.interference.orchestrator.plugins.module_utils.interference import (
    PRESSURE_DIMENSIONS,
    Profile,
    dominant_dimension,
    interference_lower_bound,
    node_interference,
    profile_for_type,
    profile_from_mapping,
)

from tests.support import kwok
from tests.support import scheduler_plugins as plugins

REPO = Path(__file__).resolve().parents[1]

RESULTS = REPO / "benchmarks" / "results" / "schedulers.json"
DELETE_PAGE = 500  # pods per deletecollection call
SCHEDULERS = ("kube-scheduler", "anti-affinity", "extender", "plugins")
MIXES = ("one-hot", "mixed")


def mix_nodes(mix: str, count: int) -> list[dict[str, Any]]:
    if mix == "one-hot":
        return [plugins.node_body(f"{mix}-{i:04d}", mix, cpu="16", memory="64Gi") for i in range(count)]
    # Two sizes: half the nodes have 4 cores, half 16.
    return [
        plugins.node_body(f"{mix}-{i:04d}", mix, cpu="4" if i % 2 else "16", memory="64Gi") for i in range(count)
    ]


def mix_pods(mix: str, count: int, node_count: int, seed: int) -> list[tuple[str, Profile, dict[str, str]]]:
    """(type label, profile, CPU request) per pod, the same for every scheduler."""
    rng = random.Random(seed)
    if mix == "one-hot":
        kinds = ["cpu", "memory"] * (count // 2) + ["cpu"] * (count % 2)
        rng.shuffle(kinds)
        return [(kind, profile_for_type(kind), {"cpu": "100m"}) for kind in kinds]
    capacity = (node_count // 2) * 16 + (node_count - node_count // 2) * 4
    budget = int(capacity * 0.75)
    pods = []
    used = 0
    for _ in range(count):
        cores = rng.choice((1, 2))
        if used + cores > budget:
            cores = 1
        used += cores
        dims = rng.sample(PRESSURE_DIMENSIONS, rng.choice((1, 2, 3)))
        profile = profile_from_mapping({dim: rng.choice((0.3, 0.5, 0.8, 1.0)) for dim in dims})
        pods.append((dominant_dimension(profile), profile, {"cpu": str(cores)}))
    return pods


def pod_body(name: str, mix: str, scheduler_name: str, anti_affinity: bool,
             spec: tuple[str, Profile, dict[str, str]]) -> dict[str, Any]:
    kind, profile, requests = spec
    mapping = {dim: value for dim, value in zip(PRESSURE_DIMENSIONS, profile, strict=True) if value}
    body = plugins.pod_body(name, mix, scheduler_name, labels={TYPE_LABEL: kind},
                            annotations={PROFILE_ANNOTATION: json.dumps(mapping)}, requests=requests)
    if anti_affinity:
        body["spec"]["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                "labelSelector": {"matchLabels": {TYPE_LABEL: kind}}},
        }]}}
    return body


def delete_pods(api: Any, namespace: str) -> None:
    """Delete every pod of a namespace: deletecollection at grace period 0, DELETE_PAGE pods per call.

    One call for 5,000 pods outlived the API server's request timeout (one
    minute, 504) on this loaded machine; pages of DELETE_PAGE finish well within it.
    """
    from kubernetes.client.exceptions import ApiException

    def gone() -> bool:
        try:
            api.delete_collection_namespaced_pod(namespace, grace_period_seconds=0, limit=DELETE_PAGE)
        except ApiException as exc:
            if exc.status != 504:  # a page that timed out is simply asked again
                raise
        return not api.list_namespaced_pod(namespace, limit=1).items

    kwok.wait_for(f"the pods of {namespace} to go", gone, timeout=1800, interval=0.1)


def histogram_quantile(text: str, series: str, labels: dict[str, str], q: float) -> float | None:
    """Quantile q of a Prometheus histogram (linear inside the bucket, as PromQL does), seconds."""
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if not line.startswith(series + "_bucket{"):
            continue
        label_text, value = line[len(series) + len("_bucket{"):].rsplit("} ", 1)
        pairs = dict(item.split("=", 1) for item in label_text.split(","))
        pairs = {k: v.strip('"') for k, v in pairs.items()}
        if any(pairs.get(k) != v for k, v in labels.items()):
            continue
        bound = float("inf") if pairs["le"] == "+Inf" else float(pairs["le"])
        buckets.append((bound, float(value)))
    merged: dict[float, float] = defaultdict(float)
    for upper, count in buckets:
        merged[upper] += count
    ordered = sorted(merged.items())
    if not ordered or ordered[-1][1] == 0:
        return None
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, cumulative in ordered:
        if cumulative >= rank:
            if bound == float("inf"):
                return lower_bound
            share = (rank - lower_count) / (cumulative - lower_count) if cumulative > lower_count else 0.0
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, cumulative
    return None


def run_one(env: dict[str, Any], scheduler: str, mix: str, round_index: int) -> dict[str, Any]:
    cluster, api, workdir = env["cluster"], env["api"], env["workdir"]
    profile = f"bench-{scheduler}-{mix}-{round_index}"
    namespace = profile
    plugins.create_namespace(api, namespace)
    specs = env["pods"][mix]
    # The role's profile names: the extender's policy only decides for pods of
    # its own scheduler name and lets the others pass untouched.
    scheduler_name = {"plugins": "gpu-scheduler", "extender": "interference-scheduler"}.get(scheduler, profile)
    bodies = [pod_body(f"p-{i:05d}", mix, scheduler_name, scheduler == "anti-affinity", spec)
              for i, spec in enumerate(specs)]
    load_before = os.getloadavg()[0]
    # Created before the scheduler starts (not timed): it meets them as one burst.
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda body: api.create_namespaced_pod(namespace, body), bodies))
    version = json.loads(api.list_namespaced_pod(namespace, limit=1, _preload_content=False).data)
    watcher = kwok.BindingWatch(api, namespace, version["metadata"]["resourceVersion"], len(specs), timeout=3600)
    watcher.start()
    recorded = "interference_extender_bindings_total{result=\"recorded\"}"
    recorded_before = kwok.metric(env["listen"], recorded) if scheduler == "extender" else None
    if scheduler == "plugins":
        process = plugins.SchedulerProcess(cluster, env["plugins_config"], workdir / f"{profile}.log")
    else:
        url = f"http://{env['listen']}" if scheduler == "extender" else None
        config = kwok.write_scheduler_config(workdir / f"{profile}.json", cluster.kubeconfig, scheduler_name, url)
        process = plugins.SchedulerProcess(cluster, config, workdir / f"{profile}.log",
                                           binary=kwok.TOOLS / "kube-scheduler")
    loads: list[float] = []
    while watcher.is_alive() and process.process.poll() is None:
        watcher.join(timeout=1)
        loads.append(os.getloadavg()[0])
    if process.process.poll() is not None:
        raise RuntimeError(f"{scheduler} exited: {(workdir / f'{profile}.log').read_text()[-3000:]}")
    seen = watcher.seen
    metrics = plugins.metrics_text(process.port)
    kwok.stop(process.process)
    times = sorted(t for t, _ in seen.values())
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    per_node: dict[str, list[Profile]] = defaultdict(list)
    for name, (_, node) in seen.items():
        per_node[node].append(specs[int(name.split("-")[1])][1])
    labels = {"profile": scheduler_name, "result": "scheduled"}
    attempt, sli = "scheduler_scheduling_attempt_duration_seconds", "scheduler_pod_scheduling_sli_duration_seconds"
    # Filter and score alone (no binding): what the plugins cost. The process has one profile.
    algorithm = "scheduler_scheduling_algorithm_duration_seconds"
    row = {
        "scheduler": scheduler, "mix": mix, "round": round_index, "nodes": env["node_count"], "pods": len(specs),
        "bound": len(seen), "pods_per_s": round(rate, 1),
        "attempt_p50_ms": _ms(histogram_quantile(metrics, attempt, labels, 0.5)),
        "attempt_p99_ms": _ms(histogram_quantile(metrics, attempt, labels, 0.99)),
        "algorithm_p50_ms": _ms(histogram_quantile(metrics, algorithm, {}, 0.5)),
        "algorithm_p99_ms": _ms(histogram_quantile(metrics, algorithm, {}, 0.99)),
        "sli_p50_ms": _ms(histogram_quantile(metrics, sli, {}, 0.5)),
        "sli_p99_ms": _ms(histogram_quantile(metrics, sli, {}, 0.99)),
        "interference": round(sum(node_interference(p) for p in per_node.values()), 3),
        "lower_bound": round(interference_lower_bound([s[1] for s in specs], env["node_count"]), 3),
        "load_1m_before": round(load_before, 2), "load_1m_after": round(os.getloadavg()[0], 2),
        # Mean of the 1-minute load average sampled every second while the burst was placed.
        "load_1m_during": round(statistics.mean(loads), 2) if loads else None,
    }
    if recorded_before is not None:
        # Bindings the extender made and recorded in its view at once (bindVerb): all of them, or the fix is off.
        row["extender_bindings_recorded"] = int((kwok.metric(env["listen"], recorded) or 0) - recorded_before)
    print(json.dumps(row), flush=True)
    delete_pods(api, namespace)
    return row


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(1000 * seconds, 2)


def bench(  # noqa: PLR0917 - the command line's options, one each
    node_count: int, pod_count: int, rounds: int, schedulers: Sequence[str], mixes: Sequence[str], seed: int,
    results: Path,
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="schedulers-bench-"))
    listen = f"127.0.0.1:{kwok.free_port()}"
    # kwokctl's own kube-scheduler would only add load: every scheduler measured is a process of ours.
    cluster = kwok.KwokCluster(name=f"sched-bench-{kwok.free_port()}", workdir=workdir,
                               create_args=("--disable-qps-limits", "--disable", "kube-scheduler"))
    cluster.create()
    extender = None
    rows: list[dict[str, Any]] = []
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    header = {"nodes": node_count, "pods": pod_count, "rounds": rounds, "seed": seed, "started": started,
              "cores": os.cpu_count()}
    try:
        api = cluster.api()
        env: dict[str, Any] = {
            "cluster": cluster, "api": api, "workdir": workdir, "listen": listen, "node_count": node_count,
            "pods": {mix: mix_pods(mix, pod_count, node_count, seed) for mix in mixes},
            "plugins_config": plugins.render_config(workdir / "gpu-scheduler", cluster.kubeconfig,
                                                    {"scheduler_plugins_qps": 5000, "scheduler_plugins_burst": 5000}),
        }
        if "extender" in schedulers:
            _, policy = kwok.render_scheduler_config(workdir, listen)
            extender = kwok.start_extender(cluster.kubeconfig, listen, policy, workdir / "extender.log")
        # One mix at a time: only its nodes exist (1,000 nodes heartbeat, not 2,000). Rounds
        # alternate the schedulers within a mix.
        for mix in mixes:
            plugins.create_nodes(api, mix_nodes(mix, node_count))
            for round_index in range(rounds):
                for scheduler in schedulers:
                    rows.append(run_one(env, scheduler, mix, round_index))
                    # After every run: an interrupted benchmark keeps the rows it measured.
                    write_results({**header, "rows": rows}, results)
            api.delete_collection_node(label_selector=f"{plugins.GROUP_LABEL}={mix}")
    finally:
        if extender is not None:
            kwok.stop(extender)
        cluster.delete()
    return {**header, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rows": rows}


def write_results(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")


def table(results: dict[str, Any]) -> str:
    """The README table: medians per scheduler and mix, throughput as a ratio to kube-scheduler."""
    rows = results["rows"]
    lines = [
        f"{results['nodes']} nodes x {results['pods']} pods per mix, {len(rows)} runs "
        f"(up to {results['rounds']} rounds; medians per scheduler and mix)",
        "",
        "| mix | scheduler | pods/s | vs kube-scheduler | attempt p50 / p99 ms | SLI p50 / p99 ms "
        "| algorithm p50 / p99 ms | interference | engine lower bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for mix in MIXES:
        base = [r["pods_per_s"] for r in rows if r["mix"] == mix and r["scheduler"] == "kube-scheduler"]
        base_rate = statistics.median(base) if base else None
        for scheduler in SCHEDULERS:
            mine = [r for r in rows if r["mix"] == mix and r["scheduler"] == scheduler]
            if not mine:
                continue

            def med(key: str, mine: list[dict[str, Any]] = mine) -> Any:
                values = [r[key] for r in mine if r.get(key) is not None]
                return round(statistics.median(values), 2) if values else "-"

            rate = med("pods_per_s")
            ratio = f"{rate / base_rate:.2f}x" if base_rate and rate != "-" else "-"
            lines.append(
                f"| {mix} | {scheduler} | {rate} | {ratio} | {med('attempt_p50_ms')} / {med('attempt_p99_ms')} "
                f"| {med('sli_p50_ms')} / {med('sli_p99_ms')} "
                f"| {med('algorithm_p50_ms')} / {med('algorithm_p99_ms')} "
                f"| {med('interference')} | {mine[0]['lower_bound']} |"
            )
    return "\n".join(lines)


def round_ratios(results: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Per (mix, scheduler): each round's pods/s and algorithm p50 as ratios to kube-scheduler's of the same round.

    Rounds alternate the schedulers (A B A B), so a round's ratio compares two
    runs minutes apart on the same cluster; the load average during each run
    is kept beside it.
    """
    rows = results["rows"]
    base = {(r["mix"], r["round"]): r for r in rows if r["scheduler"] == "kube-scheduler"}
    ratios: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        plain = base.get((r["mix"], r["round"]))
        if r["scheduler"] == "kube-scheduler" or plain is None or not plain["pods_per_s"]:
            continue
        algorithm = None
        if r.get("algorithm_p50_ms") and plain.get("algorithm_p50_ms"):
            algorithm = r["algorithm_p50_ms"] / plain["algorithm_p50_ms"]
        ratios[(r["mix"], r["scheduler"])].append({
            "round": r["round"], "throughput": r["pods_per_s"] / plain["pods_per_s"], "algorithm_p50": algorithm,
            "load": r.get("load_1m_during"), "load_plain": plain.get("load_1m_during"),
        })
    return ratios


def ratio_table(results: dict[str, Any]) -> str:
    """Median and spread (min-max) of the per-round ratios to kube-scheduler, with each round's load."""
    lines = [
        "Per-round ratios to plain kube-scheduler (same mix, same round): median [min-max] over the rounds",
        "",
        "| mix | scheduler | rounds | pods/s ratio | algorithm p50 ratio | per-round pods/s ratios "
        "| load during (this / plain) |",
        "|---|---|---|---|---|---|---|",
    ]

    def summary(values: list[float]) -> str:
        if not values:
            return "-"
        return f"{statistics.median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]"

    for (mix, scheduler), entries in sorted(round_ratios(results).items()):
        throughput = [e["throughput"] for e in entries]
        algorithm = [e["algorithm_p50"] for e in entries if e["algorithm_p50"] is not None]
        each = ", ".join(f"{e['throughput']:.2f}" for e in entries)
        loads = ", ".join(f"{e['load']}/{e['load_plain']}" for e in entries)
        lines.append(f"| {mix} | {scheduler} | {len(entries)} | {summary(throughput)} | {summary(algorithm)} "
                     f"| {each} | {loads} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each running every scheduler once (A B A B)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--schedulers", default=",".join(SCHEDULERS))
    parser.add_argument("--mixes", default=",".join(MIXES))
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"raw rows go here (default {RESULTS})")
    parser.add_argument("--table", action="store_true", help="print the table of the results file only")
    args = parser.parse_args(argv)
    if not args.table:
        schedulers = [s for s in args.schedulers.split(",") if s]
        mixes = [m for m in args.mixes.split(",") if m]
        unknown = (set(schedulers) - set(SCHEDULERS)) | (set(mixes) - set(MIXES))
        if unknown:
            parser.error(f"unknown schedulers or mixes: {sorted(unknown)}")
        # A SIGTERM (a timeout, a kill by pid) still runs the clean-ups: no cluster left behind.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        results = bench(args.nodes, args.pods, args.rounds, schedulers, mixes, args.seed, args.results)
        write_results(results, args.results)
    results = json.loads(args.results.read_text())
    print(table(results))
    print()
    print(ratio_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Isolation on this machine with plain Docker containers pinned as kind's isolated workers are
(one host CPU each), while the kind node image cannot be built: the interference probe in
each, the same stressors as playbooks/isolation.yml, samples of the probe's /metrics every
2.5 s written in isolation results.json format."""

import json
import re
import subprocess
import sys
import time
import urllib.request

PROBE = "interference-orchestrator/interference-probe:h-060908cad6c4"
MBW = "interference-orchestrator/mbw:h-7cc0b48dc609"
NODES = {"w1": ("0", 19501), "w2": ("1", 19502)}
STRESSORS = {
    "cpu": ["bash", "-c", "while :; do :; done"],
    "llc": ["mbw", "-q", "-t0", "-n", "100000000", "2"],
    "memory_bandwidth": ["mbw", "-q", "-t0", "-n", "100000000", "256"],
}
STRESS_S, WARMUP_S, SETTLE_S, STEP = 30, 10, 10, 2.5
LINE = re.compile(r"^(interference_probe_pressure|interference_probe_last_round_timestamp_seconds)\{([^}]*)\} (\S+)$")


def sh(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True).stdout.strip()


def scrape():
    out = {}
    for _node, (_, port) in NODES.items():
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        for line in body.splitlines():
            m = LINE.match(line)
            if m:
                labels = dict(kv.split("=") for kv in m.group(2).split(","))
                labels = {k: v.strip('"') for k, v in labels.items()}
                out[(m.group(1), labels["node"], labels.get("resource", ""))] = float(m.group(3))
    return out


def record(seconds):
    samples = []
    end = time.time() + seconds
    while time.time() < end:
        samples.append((time.time(), scrape()))
        time.sleep(STEP)
    return samples


def as_run(stressor, node, started, samples):
    series, rounds = [], []
    for n in NODES:
        for r in STRESSORS:
            series.append(
                {
                    "metric": {"node": n, "resource": r},
                    "values": [[t, str(s[("interference_probe_pressure", n, r)])] for t, s in samples],
                }
            )
        rounds.append(
            {
                "metric": {"node": n},
                "values": [[t, str(s[("interference_probe_last_round_timestamp_seconds", n, "")])] for t, s in samples],
            }
        )
    return {
        "stressor": stressor,
        "node": node,
        "stressor_started": started,
        "window": [started + WARMUP_S, samples[-1][0]],
        "series": series,
        "round_ends": rounds,
    }


for node, (cpu, port) in NODES.items():
    subprocess.run(["docker", "rm", "-f", f"mon-probe-{node}"], capture_output=True, check=False)
    sh(
        "docker",
        "run",
        "-d",
        "--name",
        f"mon-probe-{node}",
        "--cpuset-cpus",
        cpu,
        "-m",
        "128m",
        "-p",
        f"127.0.0.1:{port}:9477",
        PROBE,
        f"--node={node}",
        "--interval=5s",
        "--duration=100ms",
    )
time.sleep(8)
runs = []
started = time.time()
runs.append(as_run("none", "w1", started, record(STRESS_S)))
for stressor, command in STRESSORS.items():
    for node, (cpu, _) in NODES.items():
        name = f"mon-stress-{stressor.replace('_', '-')}-{node}"
        sh("docker", "run", "-d", "--rm", "--name", name, "--cpuset-cpus", cpu, "-m", "768m", MBW, *command)
        started = time.time()
        samples = record(STRESS_S)
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        runs.append(as_run(stressor, node, started, samples))
        print(stressor, node, "done", flush=True)
        time.sleep(SETTLE_S)
calibration = {n: sh("docker", "logs", f"mon-probe-{n}") for n in NODES}
for n in NODES:
    subprocess.run(["docker", "rm", "-f", f"mon-probe-{n}"], capture_output=True, check=False)
results = {
    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(runs[0]["stressor_started"])),
    "prometheus_url": "none: each probe's /metrics sampled directly (Docker containers, one host CPU each)",
    "query": "interference_probe_pressure",
    "nodes": list(NODES),
    "config": {
        "stress_s": STRESS_S,
        "warmup_s": WARMUP_S,
        "settle_s": SETTLE_S,
        "step_s": STEP,
        "rise_margin": 0.2,
        "stressors": STRESSORS,
        "image": MBW,
        "probe": {"image": PROBE, "interval": "5s", "duration": "100ms", "logs": calibration},
    },
    "runs": runs,
}
with open(sys.argv[1], "w") as out:
    json.dump(results, out, indent=1)
print("written", sys.argv[1])

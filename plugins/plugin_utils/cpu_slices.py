"""CPU slices: which host CPUs each kind worker may use.

kind workers are containers sharing every host CPU, so "another node" would
separate nothing. Each worker gets a disjoint slice of the host's CPUs; its
kubelet reserves every CPU outside the slice (see the kind_cluster role), so
its pods run only on the slice and its allocatable CPU equals the slice.
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.interference.orchestrator.plugins.module_utils.errors import PlacementError


class CpuListError(PlacementError):
    """A CPU list (Linux cpulist format, e.g. `0-3,8`) that cannot be read."""


def parse_cpu_list(text: str) -> list[int]:
    """CPU ids of a Linux cpulist such as `0-3,8` (the format of /sys/devices/system/cpu/online)."""
    cpus: set[int] = set()
    for raw in str(text).strip().split(","):
        part = raw.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise CpuListError(f"not a CPU list: {text!r} (expected e.g. '0-3,8')") from None
        if first < 0 or last < first:
            raise CpuListError(f"not a CPU list: {text!r} (range {part!r} runs backwards)")
        cpus.update(range(first, last + 1))
    if not cpus:
        raise CpuListError(f"not a CPU list: {text!r} (no CPU in it)")
    return sorted(cpus)


def format_cpu_list(cpus: Sequence[int]) -> str:
    """The cpulist form of CPU ids, ranges collapsed: [0, 1, 2, 5] -> `0-2,5`."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def worker_cpu_slices(host_cpus: Sequence[int], workers: int) -> list[dict[str, str]]:
    """Split the host CPUs into one disjoint slice per worker.

    Each worker gets len(host_cpus) // workers consecutive CPUs (the remainder
    goes unused). Returns per worker {cpus, reserved}: its slice and every
    other host CPU, both as cpulists; [] when there are fewer CPUs than workers
    (no slice can be given, so none is).
    """
    if workers <= 0:
        return []
    ordered = sorted(set(host_cpus))
    size = len(ordered) // workers
    if size == 0:
        return []
    slices = []
    for index in range(workers):
        own = ordered[index * size:(index + 1) * size]
        others = [cpu for cpu in ordered if cpu not in own]
        slices.append({"cpus": format_cpu_list(own), "reserved": format_cpu_list(others)})
    return slices

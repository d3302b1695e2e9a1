"""files/workloads/run-benchmark: the RESULT line every workload source prints.

The programs are stand-ins that print what the real ones printed here (mbw
1.2.2, stressapptest 1.0.6, 7-Zip 26.02, povray 3.7), so the test pins the
parsing and the line's shape; the kind scenario runs the real programs in
the real images.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "files" / "workloads" / "run-benchmark"
PTS_SCRIPT = REPO / "files" / "pts" / "run-benchmark"

OUTPUTS = {
    "mbw": "0\tMethod: MEMCPY\tElapsed: 0.01327\tMiB: 64.00000\tCopy: 4822.909 MiB/s\n"
    "AVG\tMethod: MEMCPY\tElapsed: 0.03171\tMiB: 64.00000\tCopy: 2018.553 MiB/s\n",
    "stressapptest": "Stats: Starting SAT, 128M, 3 seconds\n"
    "Stats: Completed: 37986.00M in 5.01s 7585.53MB/s, with 0 hardware incidents, 0 errors\n"
    "Stats: Memory Copy: 37986.00M at 7597.18MB/s\n"
    "Status: PASS - please verify no corrected errors\n",
    "7zz": "Avr:      1865    36   4613   1676  |      22971    40   4645   1881\n"
    "Tot:              38   4629   1778\n",
    "povray": "Render Statistics\n",
}
EXPECTED = {
    "mbw": ("memcpy_bandwidth", "MiB/s", 2018.553, "higher"),
    "stressapptest": ("copy_bandwidth", "MB/s", 7585.53, "higher"),
    "7zip": ("rating", "MIPS", 1778, "higher"),
    "povray": ("render_time", "s", None, "lower"),
}


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    """Stand-in programs on PATH that print the canned outputs and record their arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, output in OUTPUTS.items():
        (bin_dir / f"{name}.out").write_text(output)
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/{name}.args\ncat {bin_dir}/{name}.out\n')
        stub.chmod(0o755)
    return bin_dir


def run(programs: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PATH": f"{programs}:{os.environ['PATH']}", **env},
    )


@pytest.mark.parametrize("workload", sorted(EXPECTED))
def test_each_workload_prints_one_result_line_with_its_own_figure(programs: Path, workload: str) -> None:
    done = run(programs, workload)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("RESULT ")
    result = json.loads(line.removeprefix("RESULT "))
    metric, unit, value, better = EXPECTED[workload]
    assert (result["workload"], result["source"], result["metric"], result["unit"], result["better"]) == (
        workload, "debian", metric, unit, better,
    )
    if value is not None:
        assert result["value"] == value
    assert result["value"] >= 0 and result["wall_seconds"] >= 0


def test_the_scale_multiplies_the_work(programs: Path, tmp_path: Path) -> None:
    assert run(programs, "mbw", RUN_BENCHMARK_SCALE="3").returncode == 0
    assert "-n 120" in (tmp_path / "mbw.args").read_text()
    assert run(programs, "7zip", RUN_BENCHMARK_SCALE="2").returncode == 0
    assert (tmp_path / "7zz.args").read_text().split()[:2] == ["b", "2"]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["doom"], {}, "unknown workload 'doom'"),
        ([], {"WORKLOAD": ""}, "no workload"),
        (["mbw"], {"RUN_BENCHMARK_SCALE": "0"}, "RUN_BENCHMARK_SCALE must be a whole number >= 1, got '0'"),
    ],
)
def test_bad_input_is_named(programs: Path, args: list[str], env: dict[str, str], message: str) -> None:
    done = run(programs, *args, **env)
    assert done.returncode == 2
    assert message in done.stderr
    assert "RESULT" not in done.stdout


def test_a_failed_stress_run_prints_no_result(programs: Path) -> None:
    (programs / "stressapptest.out").write_text("Stats: Completed: 1.00M in 3.00s 0.33MB/s\nStatus: FAIL\n")
    done = run(programs, "stressapptest")
    assert done.returncode == 1
    assert "RESULT" not in done.stdout


def test_both_sources_print_the_same_line_shape() -> None:
    """The Phoronix source's script (which needs PTS to run) formats the same fields in the same order."""
    fields = '{"workload": "%s", "source": "%s", "metric": "%s", "unit": "%s", "value": %s, "better": "%s", '
    assert fields in SCRIPT.read_text()
    assert fields.replace('"source": "%s"', '"source": "pts"') in PTS_SCRIPT.read_text()

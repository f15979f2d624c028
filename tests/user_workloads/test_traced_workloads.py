"""Workloads no family computes, written as users write them: `cuco init --from-reference` stops
with the nearest family's mismatch and points at `--traced`; `cuco init --traced` writes a spec
whose one candidate, a host-driven baseline generated from the workload's trace, `cuco evolve`
(no LLM) builds with nvcc, emulates against the user's reference at worlds 2 and 4, and stores
`ok` with a simulated time."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CUCO = str(Path(sys.executable).parent / "cuco")

# file -> extra init arguments
TRACED = {
    "gated_residual_allgather": (),
    "allreduce_softmax_scores": ("--reference", "scores", "--inputs", "make_inputs"),
}


def _cuco(*args, cwd):
    return subprocess.run([CUCO, *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ))


@pytest.mark.parametrize("name", sorted(TRACED))
def test_a_workload_no_family_fits_points_at_traced(name, tmp_path):
    res = _cuco("init", "--from-reference", str(HERE / f"{name}.py"), "--out", "spec", *TRACED[name], cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "does not compute" in line and "--traced" in line.split("-- fix:")[1]
    assert not (tmp_path / "spec").exists()


@pytest.mark.parametrize("name", sorted(TRACED))
def test_a_traced_workload_gets_an_ok_baseline_without_an_llm(name, tmp_path):
    res = _cuco("init", "--from-reference", str(HERE / f"{name}.py"), "--out", "spec", "--traced", *TRACED[name],
                cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"pattern traced_{name}" in " ".join(res.stdout.split())
    assert {p.name for p in (tmp_path / "spec").iterdir()} >= {"spec.py", "reference.py", "trace.json",
                                                               "traced_pattern.py", "cuco_workload.py"}
    run = _cuco("evolve", "spec", "--run-dir", "run", "--generations", "1", "--population", "1", "--json",
                cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["status_counts"]["ok"] == 1, summary["status_counts"]
    (best,) = summary["leaderboard"]
    assert best["point"] == "host_nccl/sequential/global_barrier/cta/4096K/1"
    assert best["emulated_worlds"] == [2, 4] and best["timing_source"] == "simulated" and best["time_us"] > 0

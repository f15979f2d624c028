"""`cuco evolve`, `leaderboard`, `show` and `render` from the command line, as a user runs them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cuco.run_process import sigint_default, wait_for_evaluations

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")


def _cuco(*args, cwd):
    res = subprocess.run([CUCO, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    work = tmp_path_factory.mktemp("cli")
    out = _cuco("evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "3", cwd=work)
    assert "generation 0" in out or "gen  0" in out
    assert "leaderboard: allgather_gemm (complete)" in out
    assert "SIMULATED" in out and "speedup" in out and "--wide adds" in out
    assert max(len(line) for line in out.splitlines()) <= 100 and "\x1b" not in out  # piped: plain, 100 columns
    return work / "run"


def test_leaderboard_json_labels_every_row(run_dir):
    data = json.loads(_cuco("leaderboard", str(run_dir), "--json", cwd=run_dir.parent))
    rows = data["leaderboard"]
    assert data["status"] == "complete" and len(rows) == 6
    for row in rows:
        assert row["status"] == "ok" and row["emulated_worlds"] == [2, 4]
        assert row["timing_source"] == "simulated"
        assert 0 < row["sol"] <= 1 and row["bound_us"] > 0 and row["time_us"] >= row["bound_us"]
    speedups = [r["speedup"] for r in rows]
    assert speedups == sorted(speedups, reverse=True)


def test_show_prints_the_stored_candidate(run_dir):
    best = json.loads(_cuco("leaderboard", str(run_dir), "--json", cwd=run_dir.parent))["leaderboard"][0]
    report = json.loads(_cuco("show", best["id"][:6], "--run", str(run_dir), "--json", cwd=run_dir.parent))
    assert report["candidate"]["id"] == best["id"]
    ev = report["evaluation"]
    assert ev["status"] == "ok" and ev["build"]["arch"] == "sm_90" and ev["build"]["kernels"]
    assert {t["source"] for t in ev["timings"]} == {"simulated"}
    assert {c["world"] for c in ev["checks"]} == {2, 4}
    text = _cuco("show", best["id"], "--run", str(run_dir), cwd=run_dir.parent)
    assert "registers" in text and "SIMULATED" in text and "cuco_run" not in text
    source = _cuco("show", best["id"], "--run", str(run_dir), "--source", cwd=run_dir.parent)
    assert source == report["candidate"]["source"]  # only the source, as stored


def test_wide_leaderboard_adds_the_emulated_worlds_and_the_simulated_time(run_dir):
    text = _cuco("leaderboard", str(run_dir), "--wide", cwd=run_dir.parent)
    assert "simulated µs" in text and "✓ w=2,4" in text and "origin" in text


def test_show_finds_the_run_under_runs_by_default(run_dir, tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "x").symlink_to(run_dir)
    best = json.loads(_cuco("leaderboard", str(run_dir), "--json", cwd=tmp_path))["leaderboard"][0]
    assert best["id"] in _cuco("show", best["id"], cwd=tmp_path)


def test_rerun_resumes(run_dir):
    out = _cuco("evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "3", cwd=run_dir.parent)
    assert "resuming run 'allgather_gemm'" in out and "0 evaluated now" in out


def test_render_prints_a_candidate_for_a_point(tmp_path):
    out = _cuco("render", EXAMPLE, "--point", "lsa/fused_persistent/per_tile_signal/warp/64K/8", cwd=tmp_path)
    assert "EVOLVE-BLOCK-START" in out and "#define COMM_CTAS 8" in out and "fused_kernel" in out


def test_an_interrupted_run_loses_nothing_and_resumes(tmp_path):
    import signal

    # A cache of its own: with the suite's warm cache the whole run can finish before the interrupt.
    env = {**os.environ, "CUCO_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen([CUCO, "evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "3",
                             "--workers", "1"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=sigint_default)
    wait_for_evaluations(tmp_path / "run" / "cuco.db", proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "run the same command again to resume" in err and "Traceback" not in err
    out = _cuco("evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "3", "--json",
                cwd=tmp_path)
    data = json.loads(out)
    assert data["status"] == "complete" and data["status_counts"]["ok"] == 6
    assert data["status_counts"]["unevaluated"] == 0

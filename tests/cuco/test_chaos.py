"""Chaos: `cuco evolve` killed with SIGKILL at random moments, then the same command again. After
each trial: every candidate of an unkilled run with the same seed is there (none lost, none extra),
each evaluated exactly once, every stored row reads back whole, and the run ends complete. The
moments are drawn per trial from a fixed seed, over the span of a whole run.

Marked ``chaos`` (not in the default run): ``pytest -m chaos tests/cuco/test_chaos.py`` runs
CUCO_CHAOS_TRIALS trials per database (default 20); .ci/run runs a sample."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from candidates_db import Store
from design_space.run import RunStatus

TRIALS = int(os.environ.get("CUCO_CHAOS_TRIALS", "20"))
# Each trial is a killed run plus a whole resumed one (~20-40 s here): the suite's 600 s default
# would cut 20 trials short on a busy machine.
pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300 + 120 * TRIALS)]

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")
ARGS = ["--generations", "2", "--population", "3", "--workers", "2", "--seed", "11"]


def _command(run_dir: Path, db: str, run: str) -> list[str]:
    return [CUCO, "evolve", EXAMPLE, "--run-dir", str(run_dir), "--db", db, "--run-name", run, *ARGS]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    return {**os.environ, "CUCO_CACHE_DIR": str(tmp_path_factory.mktemp("chaos-cache"))}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, env) -> tuple[list[str], float]:
    """The candidates (content hashes in order) of an unkilled run, and how long it took (warm cache)."""
    work = tmp_path_factory.mktemp("chaos-ref")
    db = str(work / "cuco.db")
    subprocess.run(_command(work / "warm", db, "warm"), env=env, check=True, capture_output=True, timeout=900)
    start = time.monotonic()
    subprocess.run(_command(work / "ref", db, "ref"), env=env, check=True, capture_output=True, timeout=900)
    with Store.open(db) as s:
        return [c.content_hash for c in s.candidates("ref")], time.monotonic() - start


def _trial(n: int, db: str, work: Path, env: dict, span_s: float) -> tuple[float, bool]:
    run = f"chaos{n}"
    cmd = _command(work / run, db, run)
    kill_at = random.Random(n).uniform(0.2, span_s)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    killed = False
    try:
        proc.wait(timeout=kill_at)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"trial {n} (killed at {kill_at:.1f} s): {res.stderr[-2000:]}"
    return kill_at, killed


def _check(db: str, run: str, want: list[str], kill_at: float) -> None:
    where = f"{run} (killed at {kill_at:.1f} s)"
    with Store.open(db) as s:
        cands = s.candidates(run)
        assert [c.content_hash for c in cands] == want, f"{where}: not the unkilled run's candidates"
        counts = s.evaluation_counts(run)
        assert all(counts.get(c.id) == 1 for c in cands), f"{where}: evaluations per candidate {counts}"
        for c in cands:  # every row reads back whole
            assert s.get_candidate(c.id).source == c.source and s.evaluation(c.id) is not None
        assert s.get_run(run).status is RunStatus.COMPLETE, where


def _trials(db: str, work: Path, env: dict, reference) -> None:
    want, span = reference
    killed = 0
    for n in range(TRIALS):
        kill_at, was_killed = _trial(n, db, work, env, span * 1.2)
        killed += was_killed
        _check(db, f"chaos{n}", want, kill_at)
    print(f"chaos: {killed} of {TRIALS} runs killed mid-run (an unkilled run takes {span:.1f} s)")
    assert killed >= TRIALS // 2, "the kills came too late to test anything"


def test_sigkill_at_random_moments_loses_nothing_on_sqlite(tmp_path, env, reference):
    _trials(str(tmp_path / "cuco.db"), tmp_path, env, reference)


@pytest.mark.postgres
def test_sigkill_at_random_moments_loses_nothing_on_postgresql(tmp_path, env, reference, pg_url):
    _trials(pg_url, tmp_path, env, reference)

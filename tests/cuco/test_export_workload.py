"""`cuco export` of a candidate from a spec `cuco init` wrote over a user's workload: the package
stands without cuco, so it carries the family's canonical reference (what init checked the user's
code against) for check.py, the user's file beside it, and says in which layout the op takes the
weights the user keeps otherwise."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
USER = ROOT / "tests" / "user_workloads" / "linear_weight_layout.py"  # F.linear, weight [N/n, K]


def _cuco(*args, cwd, env=None):
    res = subprocess.run([CUCO, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900,
                         env=env or dict(os.environ))
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def exported(tmp_path_factory, shared_cache):
    work = tmp_path_factory.mktemp("export-workload")
    _cuco("init", "--from-reference", USER, "--out", "spec", cwd=work)
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache)}
    _cuco("evolve", "spec", "--run-dir", "run", "--generations", "1", "--population", "1", "--workers", "1",
          cwd=work, env=env)
    rows = json.loads(_cuco("leaderboard", "run", "--json", cwd=work))
    best = next(r for r in rows["leaderboard"] if r["status"] == "ok")
    _cuco("export", best["id"], "--run", "run", "--out", "exp", cwd=work)
    return work / "exp"


def test_the_package_carries_a_reference_that_needs_no_cuco_and_the_users_own_file(exported):
    reference = (exported / "reference.py").read_text()
    assert reference == (ROOT / "examples" / "allgather_gemm" / "reference.py").read_text()
    assert "cuco" not in reference.replace("cuco's", "")
    assert (exported / "user_reference.py").read_bytes() == USER.read_bytes()


def test_the_readme_says_the_op_takes_the_familys_layout(exported):
    text = " ".join((exported / "README.md").read_text().split())
    assert "`allgather_gemm` family's canonical reference" in text and "`user_reference.py`" in text
    assert "your argument 1 is kept with its last two axes swapped" in text

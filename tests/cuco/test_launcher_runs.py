"""`cuco evolve` end to end through each launcher: a local Ray (its tasks evaluate) and submitit's
local executor standing in for Slurm. Skipped, with the reason, where an extra is absent."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")


def _extra(module: str, extra: str):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"the {extra} extra is not installed (pip install 'cuco-kernels[{extra}]')")


@pytest.mark.parametrize("launcher, address", [
    pytest.param("ray", None, marks=_extra("ray", "ray")),
    pytest.param("slurm", "local", marks=_extra("submitit", "slurm")),
])
def test_a_search_runs_end_to_end_through_the_launcher(launcher, address, tmp_path, shared_cache):
    args = [CUCO, "evolve", EXAMPLE, "--run-dir", "run", "--generations", "2", "--population", "2",
            "--launcher", launcher, "--json"] + (["--launcher-address", address] if address else [])
    env = {**os.environ, "CUCO_CACHE_DIR": str(shared_cache), "RAY_DISABLE_USAGE_STATS": "1"}
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    assert data["status"] == "complete" and data["status_counts"]["ok"] == 4, data["status_counts"]

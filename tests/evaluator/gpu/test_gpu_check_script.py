"""scripts/gpu_check.sh: fails fast with one clear line without a GPU; --plan lists one point per
backend x placement of every workload; --prepare builds a sample here."""

import json
import subprocess
import time
from pathlib import Path

import pytest

from evaluator.gpu import health

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


@pytest.mark.skipif(health._device_nodes(), reason="this machine has a GPU")
def test_without_a_gpu_it_fails_fast_with_one_clear_line():
    start = time.monotonic()
    p = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert time.monotonic() - start < 5
    assert p.returncode == 3
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no NVIDIA GPU" in lines[0] and p.stdout == ""


def test_the_plan_covers_every_workload_with_one_point_per_backend_and_placement():
    out = subprocess.run([str(SCRIPT), "--plan"], capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [ln.split() for ln in out.strip().splitlines()]
    workloads = {r[0] for r in rows}
    assert {"allgather_gemm", "gemm_reducescatter", "gemm_allreduce", "moe_dispatch_combine", "ring_attention",
            "kv_cache_transfer"} <= workloads
    keys = [(r[0], *r[1].split("/")[:2]) for r in rows]
    assert len(keys) == len(set(keys))  # one per (workload, backend, placement)


def test_prepare_builds_a_sample_into_the_prepared_dir(tmp_path):
    p = subprocess.run([str(SCRIPT), "--prepare", "1", "--dir", str(tmp_path)], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "prepared 1/1" in p.stdout
    manifest = json.loads((tmp_path / "prepared" / "manifest.json").read_text())
    assert manifest[0]["ok"] and (tmp_path / "prepared" / manifest[0]["so"]).is_file()


def test_an_unknown_option_is_refused():
    p = subprocess.run([str(SCRIPT), "--bogus"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "unknown option --bogus" in p.stderr

"""The GPU check's calibration step, as far as a CPU machine can take it: the tile benchmark
builds with nvcc, the GEMM shapes come from the workloads' own costs, and a calibration in the
format it writes is what the model reads."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not installed")
def test_the_tile_benchmark_builds_for_hopper(tmp_path):
    out = subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-DCUCO_COMM_SYMM", "-DCUCO_DTYPE=2",
                          f"-I{ROOT / 'evaluator' / 'runtime'}", str(ROOT / "scripts" / "tile_bench.cu"), "-o",
                          str(tmp_path / "tile_bench")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]


def test_gemm_shapes_are_the_headline_per_rank_gemms():
    import gpu_calibrate
    shapes = {name: (m, n, k) for name, m, n, k in gpu_calibrate.gemm_shapes()}
    assert shapes["allgather_gemm"] == (4096, 49152 // 8, 12288)  # C_r = allgather(A) @ B_r at prefill-m4096


def test_a_written_calibration_is_what_the_model_reads(tmp_path):
    from design_space import get_profile
    from design_space.calibration import Calibration, CalibrationEntry, load_calibration, save_calibration
    cal = Calibration(machine="1x NVIDIA H200 (test)", date="2026-12-03", entries=(
        CalibrationEntry(gpu="H200", dtype="bf16", m=4096, n=6144, k=12288, cublas_tflops=790.0, tile_tflops=500.0),))
    path = save_calibration(cal, tmp_path / "calibration.json")
    back = load_calibration(path)
    eff = back.efficiencies(get_profile("H200"), "bf16", 2.0 * 4096 * 6144 * 12288)
    assert eff is not None and eff.tile == pytest.approx(500e12 / get_profile("H200").peak_flops["bf16"])

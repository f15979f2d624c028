"""GPU check step: calibrate the model's compute efficiencies on this GPU.

For each GEMM-shaped workload, the per-rank GEMM of its headline shape at the target world size
(m = output rows, n = output columns, k = FLOPs / 2mn, from the pattern's own cost) is timed with
cuco's tile primitive (scripts/tile_bench.cu) and with torch.matmul (cuBLAS). The results are
written as the model's calibration file (design_space/calibration.py): the default path, which
the evaluator reads, and ``calibration.json`` beside the check's table. Imported by
scripts/gpu_check_steps.py on the GPU machine only.
"""

from __future__ import annotations

import datetime
import platform
import subprocess
import time
from pathlib import Path

import gpu_check as gc

import design_space as ds
from cuco.spec_loader import load_spec
from design_space.calibration import Calibration, CalibrationEntry, save_calibration
from evaluator import toolchain

WORKLOADS = ("allgather_gemm", "gemm_reducescatter", "gemm_allreduce", "kv_cache_transfer")
BENCH = gc.ROOT / "scripts" / "tile_bench.cu"


def gemm_shapes() -> list[tuple[str, int, int, int]]:
    out = {}
    for name in WORKLOADS:
        spec = load_spec(gc.ROOT / "examples" / name)
        cost = ds.get_pattern(spec.pattern).cost(spec.headline.at(spec.target_world), spec.target_world, spec.dtype)
        m, n = cost.out_rows, cost.out_cols
        k = round(cost.flops / (2 * m * n))
        out.setdefault((m, n, k), name)
    return [(name, m, n, k) for (m, n, k), name in out.items()]


def build_bench(cache: Path) -> Path:
    exe = cache / "tile_bench"
    if not exe.is_file():
        cmd = [str(toolchain.toolchain().nvcc), "-O3", "-std=c++17", f"-arch={gc.ARCH}", "-DCUCO_COMM_SYMM",
               "-DCUCO_DTYPE=2", f"-I{gc.ROOT / 'evaluator' / 'runtime'}", str(BENCH), "-o", str(exe)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return exe


def calibrate_step(cache: Path, matmul_seconds, out_dir: Path | None) -> list[tuple]:
    """Rows for the check's table; writes the calibration file when every GEMM was timed."""
    import torch

    start = time.monotonic()
    try:
        exe = build_bench(cache)
    except (subprocess.SubprocessError, OSError) as e:
        return [("calibrate tile vs cuBLAS", "FAIL", f"tile_bench does not build: {str(e)[:150]}", 0.0)]
    gpu = torch.cuda.get_device_name(0)
    base = "H200" if "H200" in gpu else "H100" if "H100" in gpu else "A100" if "A100" in gpu else gpu
    rows, entries = [], []
    for name, m, n, k in gemm_shapes():
        t = time.monotonic()
        res = subprocess.run([str(exe), str(m), str(n), str(k), "20"], capture_output=True, text=True, timeout=120)
        fields = res.stdout.split()
        if res.returncode != 0 or len(fields) < 7:
            rows.append((f"tile {name}", "FAIL", (res.stderr or res.stdout).strip()[:150], time.monotonic() - t))
            continue
        tile_s, err = float(fields[4]), float(fields[6])
        ref_s = matmul_seconds(torch, m, n, k)
        flops = 2.0 * m * n * k
        entries.append(CalibrationEntry(gpu=base, dtype="bf16", m=m, n=n, k=k, cublas_tflops=flops / ref_s / 1e12,
                                        tile_tflops=flops / tile_s / 1e12))
        status = "ok" if err < 1e-2 * max(1.0, k / 64) else "FAIL"
        rows.append((f"tile {name} {m}x{n}x{k}", status, f"tile {flops / tile_s / 1e12:.0f} TFLOP/s, cuBLAS "
                     f"{flops / ref_s / 1e12:.0f} TFLOP/s: {ref_s / tile_s:.0%} of cuBLAS (check err {err:.2g})",
                     time.monotonic() - t))
    if entries and len(entries) == len(gemm_shapes()):
        cal = Calibration(machine=f"1x {gpu} ({platform.node()}, cuco GPU check)",
                          date=datetime.date.today().isoformat(), entries=tuple(entries))
        where = [save_calibration(cal)] + ([save_calibration(cal, out_dir / "calibration.json")] if out_dir else [])
        rows.append(("calibration written", "ok", ", ".join(map(str, where)), time.monotonic() - start))
    return rows

"""The build stage: nvcc gates candidates, stats are parsed, results are cached."""

import pytest

import design_space as ds
from evaluator import build, toolchain

PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z12fused_kernel8cuco_ctx' for 'sm_90'
ptxas info    : Function properties for _Z12fused_kernel8cuco_ctx
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 8448 bytes smem, 1024 bytes cmem[0]
ptxas info    : Function properties for _Z9gemm_tileRK8cuco_ctx
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def test_ptxas_stats_are_parsed_for_entry_functions_only():
    (k,) = build.parse_ptxas(PTXAS)
    assert (k.name, k.registers, k.smem_bytes, k.stack_bytes, k.spill_stores, k.spill_loads) == \
        ("_Z12fused_kernel8cuco_ctx", 80, 8448, 16, 8, 4)


@pytest.fixture(scope="module")
def tc():
    return toolchain.toolchain()


def test_template_builds_for_sm90_with_nccl_and_caches(tc, tmp_path):
    src = ds.get_pattern("allgather_gemm").render(ds.DesignPoint.parse_key("lsa/split_put_wait/per_tile_signal/cta/16K/2"))
    first = build.build(src, arch="sm_90", comm_backend="nccl", dtype_code=2, tc=tc, cache_dir=tmp_path / "c",
                        work_dir=tmp_path / "w")
    assert first.ok and not first.stats.cached
    assert {k.name for k in first.stats.kernels} >= {"_Z11comm_kernel8cuco_ctxll"}
    assert all(k.registers > 0 for k in first.stats.kernels)
    again = build.build(src, arch="sm_90", comm_backend="nccl", dtype_code=2, tc=tc, cache_dir=tmp_path / "c",
                        work_dir=tmp_path / "w2")
    assert again.ok and again.stats.cached and again.stats.kernels == first.stats.kernels


def test_compile_errors_are_reported_not_raised(tc, tmp_path):
    out = build.build('#include "cuco_comm.h"\n__global__ void k() { undeclared_thing(); }\n', arch="sm_90",
                      comm_backend="nccl", dtype_code=2, tc=tc, cache_dir=tmp_path, work_dir=tmp_path / "w")
    assert not out.ok and "undeclared_thing" in out.log


def test_missing_nvcc_names_the_wheels(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUCO_NVCC", raising=False)
    monkeypatch.setattr(toolchain, "nvidia_roots", lambda: [])
    with pytest.raises(ds.ToolchainError) as info:
        toolchain.find_nvcc()
    assert "nvidia-cuda-nvcc" in info.value.fix


def test_missing_gxx_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUCO_CXX", raising=False)
    with pytest.raises(ds.ToolchainError, match="apt-get install g"):
        toolchain.find_gxx()


@pytest.mark.parametrize("key", ["lsa/sequential/global_barrier/warp/64K/4", "lsa/fused_persistent/per_tile_signal/cta/16K/2"])
def test_templates_also_build_against_the_symm_backend(tc, tmp_path, key):
    src = ds.get_pattern("allgather_gemm").render(ds.DesignPoint.parse_key(key))
    out = build.build(src, arch="sm_90", comm_backend="symm", dtype_code=2, tc=tc, cache_dir=tmp_path,
                      work_dir=tmp_path / "w")
    assert out.ok, out.log
    assert out.stats.comm_backend == "symm" and out.stats.kernels

"""Candidates build as shared libraries for sm_90 (no GPU needed), load with ctypes here and
export cuco_run plus the co-residency controls; the NCCL host helper builds and loads too."""

import ctypes
import random

import pytest

import design_space as ds
from evaluator import toolchain
from evaluator.gpu.native import CandidateLib, NcclHelper
from evaluator.gpu.shared_build import build_nccl_helper, build_shared, so_flags

TINY = r"""
#include "cuco_comm.h"
__global__ void scale_kernel(cuco_ctx c) {
  const cuco_t* in = static_cast<const cuco_t*>(c.in[0]);
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < c.dims[0]; i += gridDim.x * blockDim.x)
    out[i] = cuco_from_float<cuco_t>(2.f * cuco_to_float(in[i]));
  cuco_barrier(c, 0);
}
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  scale_kernel<<<ctx->num_sms, 128, 0, stream>>>(*ctx);
  return (int)cudaGetLastError();
}
"""


@pytest.fixture(scope="module")
def tc():
    return toolchain.toolchain()


def test_flags_link_cudart_statically_and_nccl_by_soname_with_an_rpath(tc):
    flags = so_flags("sm_90", "nccl", 2, tc)
    assert {"-shared", "-fPIC", "-arch=sm_90", "-DCUCO_COMM_NCCL", "-DCUCO_DTYPE=2", "-DCUCO_CHECKED_LAUNCH"} <= set(flags)
    assert flags[flags.index("-cudart") + 1] == "static"
    assert "-l:libnccl.so.2" in flags and any(f.startswith("-rpath,") for f in flags)
    assert "-l:libnccl.so.2" not in so_flags("sm_90", "symm", 2, tc)
    with pytest.raises(ValueError, match="GPU backend"):
        so_flags("sm_90", "cpu", 2, tc)


def test_a_checked_symm_build_loads_and_exports_the_entry_and_controls(tc, tmp_path, shared_cache):
    built = build_shared(TINY, arch="sm_90", backend="symm", dtype_code=2, tc=tc, cache_dir=shared_cache,
                         work_dir=tmp_path / "w")
    assert built.ok, built.log
    lib = CandidateLib(built.path)
    assert lib.checked and hasattr(lib.lib, "cuco_run")
    # the harness runs cuco_run through the stream tracker and asks whether side streams are idle
    assert hasattr(lib.lib, "cuco_gpu_run_tracked") and hasattr(lib.lib, "cuco_gpu_stream_busy")
    lib.set_sm_share(66)  # host-only controls work without a GPU
    lib.set_dry_run(True)
    lib.set_dry_run(False)
    assert lib.refusal() == ""
    again = build_shared(TINY, arch="sm_90", backend="symm", dtype_code=2, tc=tc, cache_dir=shared_cache,
                         work_dir=tmp_path / "w2")
    assert again.cached and again.path == built.path


def test_an_unchecked_build_has_no_controls(tc, tmp_path, shared_cache):
    built = build_shared(TINY, arch="sm_90", backend="symm", dtype_code=0, tc=tc, cache_dir=shared_cache,
                         work_dir=tmp_path / "w", checked=False)
    assert built.ok, built.log
    assert not CandidateLib(built.path).checked


def test_an_nccl_build_resolves_libnccl_through_its_rpath(tc, tmp_path, shared_cache):
    built = build_shared(TINY, arch="sm_90", backend="nccl", dtype_code=2, tc=tc, cache_dir=shared_cache,
                         work_dir=tmp_path / "w")
    assert built.ok, built.log
    assert hasattr(ctypes.CDLL(str(built.path)), "cuco_run")


def test_a_compile_error_is_a_failed_build_with_the_log(tc, tmp_path, shared_cache):
    built = build_shared(TINY.replace("2.f *", "undefined_thing *"), arch="sm_90", backend="symm", dtype_code=2,
                         tc=tc, cache_dir=shared_cache, work_dir=tmp_path / "w")
    assert not built.ok and built.path is None
    assert "undefined_thing" in built.log


def test_the_nccl_host_helper_builds_and_reports_the_library_version(tc, tmp_path, shared_cache):
    built = build_nccl_helper(arch="sm_90", tc=tc, cache_dir=shared_cache, work_dir=tmp_path / "h")
    assert built.ok, built.log
    helper = NcclHelper(built.path)
    for name in ("cuco_nccl_open", "cuco_nccl_close", "cuco_nccl_pointers", "cuco_nccl_peer_pointers",
                 "cuco_nccl_zero", "cuco_nccl_unique_id"):
        assert hasattr(helper.lib, name)
    major, minor = (int(x) for x in tc.nccl_version.split(".")[:2])
    assert helper.version() // 10000 == major and helper.version() // 100 % 100 == minor
    assert helper.close() == ""  # nothing open: a no-op


def test_a_rendered_template_builds_with_checked_launches(tc, tmp_path, shared_cache):
    pattern = ds.get_pattern("allgather_gemm")
    points = [p for p in ds.valid_points(pattern, ds.get_profile("H200")) if p.backend.value in ("lsa", "symm")]
    point = random.Random(0).choice(points or ds.valid_points(pattern, ds.get_profile("H200")))
    built = build_shared(pattern.render(point), arch="sm_90", backend="symm", dtype_code=2, tc=tc,
                         cache_dir=shared_cache, work_dir=tmp_path / "t")
    assert built.ok, f"{point.key()}:\n{built.log[-2000:]}"
    assert CandidateLib(built.path).checked

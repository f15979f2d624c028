"""Reading SASS without a GPU: tensor-core MMA, widest global access, local memory per kernel."""

import shutil

import pytest

import design_space as ds
from evaluator import build, sass, toolchain

SAMPLE = """
        Function : _Z4tileP6float
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   HMMA.16816.F32.BF16 R8, R12, R16, R8 ;
        /*0020*/                   HMMA.16816.F32.BF16 R8, R12, R18, R8 ;
        /*0030*/                   STL [R1], R4 ;
        Function : _Z6scalarPf
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/                   FFMA R5, R4, R4, R5 ;
        /*0020*/                   STG.E.64 desc[UR4][R2.64], R4 ;
"""


def test_sass_text_is_read_per_kernel():
    tile, scalar = sass.parse_sass(SAMPLE)
    assert (tile.name, tile.mma, tile.widest_global_bytes, tile.local_accesses) == ("_Z4tileP6float", 2, 16, 1)
    assert (scalar.mma, scalar.widest_global_bytes, scalar.local_accesses) == (0, 8, 0)


@pytest.mark.skipif(sass.sass_tool() is None or not shutil.which("g++"),
                    reason="cuobjdump not found: pip install -e '.[dev]' (nvidia-cuda-cuobjdump)")
def test_the_build_stage_records_mma_counts_of_a_template(tmp_path):
    import kernels  # noqa: F401
    point = ds.DesignPoint.parse_key("lsa/sequential/global_barrier/cta/64K/1")
    src = ds.get_pattern("allgather_gemm").render(point)
    out = build.build(src, arch="sm_90", comm_backend="nccl", dtype_code=2, tc=toolchain.toolchain(),
                      cache_dir=tmp_path / "c", work_dir=tmp_path / "w")
    assert out.ok, out.log
    assert all(k.mma is not None for k in out.stats.kernels)
    assert all(k.widest_global_bytes in (4, 8, 16) for k in out.stats.kernels)

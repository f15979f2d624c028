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


NVDISASM = """
//--------------------- .text._Z4tileP6float --------------------------
        .section        .text._Z4tileP6float,"ax",@progbits
_Z4tileP6float:
.text._Z4tileP6float:
        /*0000*/                   LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;
        /*0010*/               @P0 HMMA.16816.F32.BF16 R8, R12, R16, R8 ;
        /*0020*/              @!P1 HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0030*/                   STL [R1], R4 ;
//--------------------- .text._Z6scalarPf --------------------------
.text._Z6scalarPf:
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/                   CALL.REL.NOINC `(HMMA) ;
        /*0020*/                   STG.E.64 desc[UR4][R2.64], R4 ;
.L_x_HMMA:
        /*0030*/                   EXIT ;
"""


def test_sass_text_is_read_per_kernel():
    tile, scalar = sass.parse_sass(SAMPLE)
    assert (tile.name, tile.mma, tile.widest_global_bytes, tile.local_accesses) == ("_Z4tileP6float", 2, 16, 1)
    assert (scalar.mma, scalar.widest_global_bytes, scalar.local_accesses) == (0, 8, 0)


def test_nvdisasm_listings_are_read_per_kernel():
    tile, scalar = sass.parse_sass(NVDISASM)
    assert (tile.name, tile.mma, tile.widest_global_bytes, tile.local_accesses) == ("_Z4tileP6float", 2, 16, 1)
    assert (scalar.name, scalar.widest_global_bytes, scalar.local_accesses) == ("_Z6scalarPf", 8, 0)


def test_only_opcodes_count_not_names_of_calls_or_labels():
    """A device function or label called HMMA is not a tensor-core instruction."""
    assert sass.parse_sass(NVDISASM)[1].mma == 0


@pytest.mark.skipif(sass.sass_tool() is None or not shutil.which("g++"),
                    reason="no SASS disassembler: pip install -e '.[dev]' (nvidia-cuda-nvdisasm)")
def test_the_build_stage_records_mma_counts_of_a_template(tmp_path):
    import kernels  # noqa: F401
    point = ds.DesignPoint.parse_key("lsa/sequential/global_barrier/cta/64K/1")
    src = ds.get_pattern("allgather_gemm").render(point)
    out = build.build(src, arch="sm_90", comm_backend="nccl", dtype_code=2, tc=toolchain.toolchain(),
                      cache_dir=tmp_path / "c", work_dir=tmp_path / "w")
    assert out.ok, out.log
    assert all(k.mma is not None for k in out.stats.kernels)
    assert all(k.widest_global_bytes in (4, 8, 16) for k in out.stats.kernels)

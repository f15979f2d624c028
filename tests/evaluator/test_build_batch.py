"""Batched sweep builds: several sources in one nvcc call, each in its own namespace; a batch that
fails is rebuilt one source at a time so the broken source gets its own verdict and log."""

from pathlib import Path

import pytest

import design_space as ds
from evaluator import build_batch, toolchain

PATTERN = ds.get_pattern("allgather_gemm")
KEYS = ("lsa/sequential/global_barrier/cta/4K/2", "gin/stream_overlap/per_tile_signal/warp/4K/2",
        "lsa/fused_persistent/per_peer_signal/cta/64K/4")


def _sources() -> list[str]:
    return [PATTERN.render(ds.DesignPoint.parse_key(k)) for k in KEYS]


def test_each_source_gets_its_own_namespace_and_its_macros_are_undefined_after_it():
    text = build_batch.batch_source(_sources())
    assert text.count('#include "cuco_comm.h"') == 1 + len(KEYS)  # hoisted once, then no-ops inside
    assert text.index('#include "cuco_comm.h"') < text.index("namespace cuco_batch_0 {")
    for i in range(len(KEYS)):
        assert f"namespace cuco_batch_{i} {{" in text and f'#line 1 "point-{i}.cu"' in text
    after_first = text.split("}  // namespace cuco_batch_0")[1].split("namespace cuco_batch_1")[0]
    assert "#undef CHUNK_BYTES" in after_first and "#undef COMM_CTAS" in after_first
    assert 'extern "C"' not in text  # every member's cuco_run must be its own symbol


def test_a_source_with_code_before_an_include_is_not_batchable():
    assert build_batch.batchable(_sources()[0])
    assert not build_batch.batchable('#define CUCO_X 1\n#include "cuco_comm.h"\n')
    assert build_batch.batchable('// a comment\n#include <cstdint>\n#include "cuco_comm.h"\nint x;\n')
    assert not build_batch.batchable('#include "cuco_comm.h"\nextern "C" {\nint f();\n}\n')


def test_template_sources_build_together_in_one_call(tmp_path: Path):
    out = build_batch.build_batch(_sources(), arch="sm_90", comm_backend="nccl", dtype_code=ds.DType.BF16.code,
                                  tc=toolchain.toolchain(), cache_dir=tmp_path / "cache", work_dir=tmp_path / "w")
    assert [r.ok for r in out] == [True] * len(KEYS), out[0].log[-2000:]
    assert all(r.batched and r.seconds > 0 for r in out)


@pytest.mark.parametrize("broken_at", [0, pytest.param(2, marks=pytest.mark.slow)])  # each rebuilds all alone
def test_a_broken_source_fails_alone_and_the_others_still_pass(tmp_path: Path, broken_at: int):
    sources = _sources()
    sources[broken_at] = sources[broken_at].replace('#include "cuco_comm.h"\n',
                                                    '#include "cuco_comm.h"\nint broken = undefined_slot;\n', 1)
    assert "undefined_slot" in sources[broken_at]
    out = build_batch.build_batch(sources, arch="sm_80", comm_backend="nccl", dtype_code=ds.DType.BF16.code,
                                  tc=toolchain.toolchain(), cache_dir=tmp_path / "cache", work_dir=tmp_path / "w")
    assert [r.ok for r in out] == [i != broken_at for i in range(len(sources))]
    assert "undefined_slot" in out[broken_at].log and "candidate.cu" in out[broken_at].log  # its own log
    assert not any(r.batched for r in out)


def test_a_source_is_never_batched_with_headers_it_did_not_include(tmp_path: Path):
    sources = _sources()
    # uses cuco_comm.h without including it: alone, nvcc must refuse it
    sources.append(sources[0].replace('#include "cuco_comm.h"\n', "#include <cstdint>\n", 1))
    out = build_batch.build_batch(sources, arch="sm_90", comm_backend="nccl", dtype_code=ds.DType.BF16.code,
                                  tc=toolchain.toolchain(), cache_dir=tmp_path / "cache", work_dir=tmp_path / "w")
    assert [r.ok for r in out] == [True, True, True, False]
    assert [r.batched for r in out] == [True, True, True, False]

"""Scores follow the code: the score stage credits the design the code was observed to implement,
with the compute rate its code features earn. A declared point the code contradicts is refused; a
kernel that drops the tensor-core tile for a scalar loop scores lower than the honest render, and so
does one that keeps a decoy tile call beside its scalar loop (the dependence probe finds that no
output depends on the tile's result). Synchronisation hidden from the trace (raw atomics on the
signal pad instead of cuco_signal_add / cuco_wait) buys no score: the code reads as global_barrier,
and is charged the launches it makes."""

import re

import pytest

import design_space as ds
from design_space.evaluation import Stage, Status
from design_space.point import DesignPoint

HONEST = "lsa/split_put_wait/per_tile_signal/warp/256K/4"

# The same tile contract, computed by one thread per output element with a scalar fp32 loop.
SCALAR_TILE = """static __device__ void gemm_tile(const cuco_ctx& c, const Problem& p, int src, int64_t lo, int64_t hi, int64_t col0) {
  const cuco_t* A = a_rows(c, p, src, lo);
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]) + col0;
  cuco_t* C = static_cast<cuco_t*>(c.out[0]) + (src * p.shard + lo) * p.Nl + col0;
  const int64_t rows = hi - lo, cols = p.Nl - col0 < Cfg::BN ? p.Nl - col0 : Cfg::BN;
  for (int64_t e = threadIdx.x; e < rows * cols; e += blockDim.x) {
    const int64_t i = e / cols, j = e % cols;
    float sum = 0.f;
    for (int64_t k = 0; k < p.K; ++k) sum += cuco_to_float(A[i * p.K + k]) * cuco_to_float(B[k * p.Nl + j]);
    C[i * p.Nl + j] = cuco_from_float<cuco_t>(sum);
  }
  __syncthreads();
}
"""


# The scalar loop computes C; the tile runs on the same operands, its result dropped ("dropped") or
# added to C times zero ("times_zero"), so the trace counts every FLOP through the tile.
DECOY_TILE = {
    "dropped": "",
    "times_zero": """  cuco_gemm_for_each(acc, rows, cols, [&](int r, int cc, float v) {
    C[r * p.Nl + cc] = cuco_from_float<cuco_t>(cuco_to_float(C[r * p.Nl + cc]) + 0.f * v);
  });
""",
}


def _decoy(source: str, use: str) -> str:
    tile = ("  cuco_gemm_acc<Cfg> acc;\n  acc.zero();\n"
            "  cuco_gemm_tile<Cfg>(acc, smem, A, p.K, rows, B, p.Nl, cols, p.K);\n" + DECOY_TILE[use])
    return _scalar(source).replace("  __syncthreads();\n}\n", "  __syncthreads();\n" + tile + "}\n", 1)


def _render(key: str) -> str:
    return ds.get_pattern("allgather_gemm").render(DesignPoint.parse_key(key))


def _scalar(source: str) -> str:
    start = source.index("static __device__ void gemm_tile(")
    end = source.index("\n}\n", start) + 3
    return source[:start] + SCALAR_TILE + source[end:]


def _evaluate(ev, source: str, declared: str):
    cand = ds.Candidate(origin=ds.Origin(kind="manual"), source=source, point=DesignPoint.parse_key(declared))
    return ev.evaluate(cand)


@pytest.fixture(scope="module")
def honest(example_evaluator):
    result = _evaluate(example_evaluator, _render(HONEST), HONEST)
    assert result.status is Status.OK, result.reason + "\n" + result.logs
    return result


def test_the_honest_render_is_credited_with_the_tensor_core_tile(honest):
    assert honest.features is not None and honest.features.tensor_core
    assert honest.features.tensor_core_flop_share > 0.9
    assert honest.observed_point == HONEST
    assert honest.speedup is not None and honest.speedup > 0


def test_a_declared_point_the_code_does_not_implement_is_refused(example_evaluator):
    # global-barrier code claiming the per-tile design the model credits with more overlap, with a
    # signal and a wait it never runs so that the guard's reading of the text agrees
    source = _render("lsa/split_put_wait/global_barrier/warp/256K/4")
    decoy = ("static __device__ void never_called(const cuco_ctx& c) {\n"
             "  cuco_signal_add(c, 0, 1, 1);\n  cuco_wait(c, 1, 1);\n}\n")
    source = source.replace("// EVOLVE-BLOCK-END", decoy + "// EVOLVE-BLOCK-END")
    result = _evaluate(example_evaluator, source, HONEST)
    assert result.status is Status.REJECTED and result.stage is Stage.SCORE, result.reason
    assert "global_barrier" in result.reason and "declared " + HONEST in result.reason


def test_a_declaration_the_guard_can_read_as_false_is_refused_before_the_build(example_evaluator):
    source = _render("host_nccl/sequential/global_barrier/cta/4096K/1")
    result = _evaluate(example_evaluator, source, HONEST)
    assert result.status is Status.REJECTED and result.stage is Stage.GUARD
    assert "declared " + HONEST in result.reason


def test_a_scalar_rewrite_of_the_gemm_scores_below_the_tile(example_evaluator, honest):
    result = _evaluate(example_evaluator, _scalar(_render(HONEST)), HONEST)
    assert result.status is Status.OK, result.reason + "\n" + result.logs
    assert result.features is not None and not result.features.tensor_core
    assert result.speedup < honest.speedup / 5, (result.speedup, honest.speedup)


@pytest.mark.parametrize("use", sorted(DECOY_TILE))
def test_a_decoy_tile_beside_a_scalar_loop_earns_no_tensor_core_credit(example_evaluator, honest, use):
    result = _evaluate(example_evaluator, _decoy(_render(HONEST), use), HONEST)
    assert result.status is Status.OK, result.reason + "\n" + result.logs
    features = result.features
    assert features is not None and features.tile_output_dependence is not None
    assert features.tile_output_dependence < 0.05 and features.tensor_core_flop_share < 0.05, features
    assert honest.features.tile_output_dependence > 0.99
    assert result.speedup < honest.speedup / 5, (result.speedup, honest.speedup)


def _hide_waits(source: str) -> str:
    """The same pipeline with its signals and waits as raw atomics on the signal pad, which the
    emulator's trace does not see, plus a barrier it never calls for the guard's reading."""
    source = re.sub(r"cuco_wait\(c, ([^,]+), ([^;]+)\);",
                    r"while (cuco_ld_acquire(c.signals + (\1)) < (\2)) __nanosleep(64);", source)
    source = re.sub(r"cuco_signal_add\(c, ([^,]+), ([^;]+), ([^,;]+)\);",
                    r"{ __threadfence_system(); atomicAdd((unsigned long long*)(cuco_peer_signals(c, \1) + (\2)), "
                    r"(unsigned long long)(\3)); }", source)
    decoy = "static __device__ void never_called(const cuco_ctx& c) { cuco_barrier(c, 0); }\n"
    return source.replace("// EVOLVE-BLOCK-END", decoy + "// EVOLVE-BLOCK-END")


@pytest.mark.parametrize("chunk", ["4K", "256K"])
def test_waits_hidden_from_the_trace_score_no_better_than_the_pipeline_that_shows_them(example_evaluator, chunk):
    shown, hidden_key = f"lsa/stream_overlap/per_tile_signal/warp/{chunk}/8", f"lsa/stream_overlap/global_barrier/warp/{chunk}/8"
    source = _hide_waits(_render(shown))
    assert "cuco_wait(" not in source and "cuco_signal_add(" not in source
    honest, hidden = _evaluate(example_evaluator, _render(shown), shown), _evaluate(example_evaluator, source, hidden_key)
    assert honest.status is Status.OK and hidden.status is Status.OK, hidden.reason + "\n" + hidden.logs
    assert hidden.observed_point == hidden_key
    assert any(line.startswith("launches:") for line in hidden.observed), hidden.observed
    # before launches came from the code and a stream pipeline was charged per chunk whatever its
    # waits, the hidden 4K pipeline scored ~100x the one that shows them
    assert hidden.speedup <= honest.speedup * 1.02, (hidden.speedup, honest.speedup)

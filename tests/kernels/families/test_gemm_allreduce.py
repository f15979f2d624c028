"""The GEMM + all-reduce (+ RMSNorm) family: a seeded sample of valid points builds (nvcc, nccl
backend) and passes emulation; broken waits, offsets, chunk loops and a dropped GEMM tile fail
emulation, every time; every kernel that computes partial tiles runs on tensor cores; cost() and
the gloo reference match hand computations."""

from pathlib import Path

import numpy as np
import pytest

import design_space as ds
from evaluator import emulate
from tests.kernels.families.family_helpers import (sampled, gemm_kernels_per_backend, assert_sample_passes,
                                                    emulate_only, mutate)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gemm_allreduce"
PATTERN = ds.get_pattern("gemm_allreduce")
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# Kernels that compute partial tiles (the others only move, sum or normalise rows).
GEMM_KERNELS = ("gemm_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_partial_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert len(tiles) == 2, (key, [k.name for k in tiles])  # short and tall tiles
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        assert all(k.spill_stores == 0 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])


# (point, text, replacement): every backend with device-side synchronisation loses a wait; a
# reduce-scatter put lands in the wrong STAGE block; a put loop drops its last chunk; the GEMM
# drops the last tile of every chunk.
MUTATIONS = {
    "lsa-one-shot-missing-wait": ("lsa/fused_persistent/per_tile_signal/warp/4K/2",
                                  "    wait_arrivals(c, p, g);\n", ""),
    "lsa-two-shot-missing-peer-wait": ("lsa/split_put_wait/per_peer_signal/warp/4K/2",
                                       "    wait_arrivals(c, p, g);\n", ""),
    "gin-missing-wait": ("gin/stream_overlap/per_tile_signal/cta/4K/1",
                         "  if (group_lane() == 0) wait_result(c, p, ch.owner, g);\n", ""),
    "multimem-missing-wait": ("multimem/fused_persistent/per_tile_signal/warp/4K/2",
                              "    wait_arrivals(c, p, g);\n", ""),
    "copy_engine-missing-wait": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1",
                                 "      if (SCOPE_SIGNALS) cuco_ce_wait(c, SLOT_RESULT + result_idx(ch.owner, g), "
                                 "result_need(c, p), st);\n", ""),
    "lsa-wrong-peer-offset": ("lsa/stream_overlap/per_peer_signal/thread/4K/1",
                              "stage_off(p, c.rank, ch.lo - ch.owner * p.R)",
                              "stage_off(p, (c.rank + 1) % c.world, ch.lo - ch.owner * p.R)"),
    "gin-dropped-chunk": ("gin/sequential/global_barrier/cta/4K/1",
                          "it < nst * per; it += groups)", "it < nst * per - 1; it += groups)"),
    "copy_engine-dropped-chunk": ("copy_engine/sequential/global_barrier/copy_engine/4K/1",
                                  "for (int64_t s = 0; s < nch; ++s) ce_publish(",
                                  "for (int64_t s = 0; s + 1 < nch; ++s) ce_publish("),
    "gemm-dropped-tile": ("lsa/sequential/global_barrier/cta/16K/1",
                          "if (j >= tiles_in(p, ch)) continue;", "if (j + 1 >= tiles_in(p, ch)) continue;"),
}
# (point, text, replacement): each place the bias is added (the owner's row sum, the switch's sum,
# the host_nccl baseline's epilogue kernel) forgets it, or adds it on every rank before the sum.
BIAS_MUTATIONS = {
    "owner-sum-without-bias": ("lsa/split_put_wait/per_tile_signal/warp/4K/2",
                               "(p.bias ? cuco_to_float(gamma[col]) : 0.f)", "0.f"),
    "switch-sum-without-bias": ("multimem/sequential/global_barrier/warp/4K/2", "if (p.bias) {", "if (false) {"),
    "baseline-without-bias": ("host_nccl/sequential/global_barrier/cta/4K/1", "(p.norm || p.bias)", "(p.norm)"),
    "bias-on-every-partial": ("lsa/split_put_wait/per_peer_signal/warp/4K/2",
                              "(p.bias ? cuco_to_float(gamma[col]) : 0.f)",
                              "(p.bias ? c.world * cuco_to_float(gamma[col]) : 0.f)"),
}


@pytest.mark.parametrize("name", sampled(sorted(BIAS_MUTATIONS)))
def test_a_kernel_that_mishandles_the_bias_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    key, old, new = BIAS_MUTATIONS[name]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    outcome = emulate_only(broken, spec, cases, shared_cache, tmp_path)
    assert outcome.status is ds.Status.WRONG_RESULT, f"{name}: {outcome.status.value} {outcome.reason}"
    assert "emu-bias" in outcome.reason, outcome.reason


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_synchronisation_or_transfer_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS[name]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    outcome = emulate_only(broken, spec, cases, shared_cache, tmp_path)
    assert outcome.status in FAILED, f"{name}: {outcome.status.value} {outcome.reason}"


def test_a_missing_wait_fails_every_time(evaluator):
    key, old, new = MUTATIONS["lsa-two-shot-missing-peer-wait"]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    evals = [evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=broken)) for _ in range(5)]
    assert {e.status for e in evals} == {ds.Status.WRONG_RESULT}, [e.reason for e in evals]
    assert len({e.reason for e in evals}) == 1  # the same failure: same case, rank and mismatch count


def test_cost_matches_hand_computed_numbers_for_a_prefill_mlp_shape():
    # M=4096 tokens, N=8192 hidden, K=28672 MLP width, TP=8, bf16: each rank multiplies K/8 = 3584.
    c = PATTERN.cost({"m": 4096, "n": 8192, "k": 28672, "rmsnorm": 1}, 8, ds.DType.BF16)
    assert c.flops == 2 * 4096 * 8192 * 3584 == 240_518_168_576
    assert c.hbm_bytes == (4096 * 3584 + 3584 * 8192 + 2 * 4096 * 8192) * 2 == 222_298_112
    assert (c.collective, c.comm_bytes) == ("allreduce", 4096 * 8192 * 2)
    assert (c.out_rows, c.out_cols, c.local_fraction) == (4096, 8192, 0.0)


def test_symmetric_buffer_holds_partial_stage_and_result_rows():
    # M=37 over 4 ranks: R = 10 owned rows per rank, so 2*37 + 4*10 rows of N=520 bf16 elements.
    assert PATTERN.symm_bytes({"m": 37, "n": 520, "k": 40, "rmsnorm": 2}, 4, ds.DType.BF16) == (74 + 40) * 520 * 2


def test_dims_that_do_not_split_k_are_reported():
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 10, "rmsnorm": 1}, 4) == ["k=10 is not divisible by world size 4"]
    assert "missing" in PATTERN.dim_problems({"m": 8, "n": 8, "k": 8}, 2)[0]


def test_an_epilogue_other_than_norm_plain_or_bias_is_reported():
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 8, "rmsnorm": 3}, 2) == []
    (problem,) = PATTERN.dim_problems({"m": 8, "n": 8, "k": 8, "rmsnorm": 0}, 2)
    assert "must be 1, 2 or 3" in problem and "bias" in problem


def test_multimem_without_per_chunk_signals_is_excluded_only_when_it_cannot_overlap():
    cut = ds.DesignPoint.parse_key("multimem/stream_overlap/per_peer_signal/warp/4K/2")
    kept = ds.DesignPoint.parse_key("multimem/stream_overlap/per_tile_signal/warp/4K/2")
    assert "nothing to overlap" in PATTERN.excluded(cut)
    assert PATTERN.excluded(kept) is None
    assert cut not in ds.valid_points(PATTERN, ds.get_profile("H100"))


def _single_process(rank_inputs: list, epilogue: int) -> np.ndarray:
    y = sum(a.astype(np.float64) @ b.astype(np.float64) for a, b, _ in rank_inputs)
    gamma = rank_inputs[0][2].astype(np.float64)
    if epilogue == 1:
        y = y / np.sqrt((y * y).mean(axis=1, keepdims=True) + 1e-6) * gamma
    return y + gamma if epilogue == 3 else y


def test_gloo_reference_at_world_two_matches_a_single_process_computation(cases):
    for case in (c for c in cases if c.world == 2):
        load = lambda tf: emulate.as_float32(tf.path, tf.dtype, tf.shape)  # noqa: E731
        inputs = [tuple(load(tf) for tf in rd.inputs) for rd in case.ranks]
        assert np.array_equal(inputs[0][2], inputs[1][2])  # gamma is the same on every rank
        assert not np.array_equal(inputs[0][0], inputs[1][0])  # A is not
        expected = _single_process(inputs, case.shape.dims["rmsnorm"])
        for rd in case.ranks:
            got = load(rd.outputs[0])
            np.testing.assert_allclose(got, expected, atol=2e-2, rtol=2e-2, err_msg=case.shape.name)

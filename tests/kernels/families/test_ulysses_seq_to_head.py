"""The DeepSpeed-Ulysses sequence -> head all-to-all (ulysses_seq_to_head): a seeded sample of its
valid points builds (nvcc, nccl backend) and passes emulation at 2 and 4 ranks, and so does one
point of every backend x placement x sync scope (slow set); a missing wait, a wrong peer offset
and a dropped chunk fail emulation every time, on every backend with device-side synchronisation;
cost() and the model of a zero-FLOP workload match hand computations; the gloo reference is the
exchange computed by indexing in one process. ulysses_head_to_seq renders from the same templates
(test_ulysses_head_to_seq.py).

The family has no GEMM, so the tensor-core test of the GEMM families does not apply: no kernel
calls the GEMM tile, and a candidate is scored on its memory traffic (its FLOPs are 0).
scripts/check_all_points.py checks every point."""

from pathlib import Path

import pytest

import design_space as ds
from design_space.code_features import SCALAR_TYPICAL, TENSOR_CORE_TYPICAL
from tests.kernels.families.family_helpers import assert_sample_passes, emulate_only, mutate, sampled
from tests.kernels.families.ulysses_checks import (MUTATIONS, assert_every_combination_passes,
                                                   assert_gloo_reference_is_the_exchange, assert_mutation_fails,
                                                   seq_to_head)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ulysses_seq_to_head"
PATTERN = ds.get_pattern("ulysses_seq_to_head")
LLAMA_Q = {"b": 1, "s": 32768, "h": 32, "d": 128}  # Llama-3-8B queries at 32K tokens


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


@pytest.mark.slow  # 27 emulations (~2 min): the default run keeps the seeded sample
def test_every_backend_placement_and_sync_scope_passes(spec, cases, shared_cache, tmp_path):
    assert_every_combination_passes(PATTERN, spec, cases, shared_cache, tmp_path)


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_transfer_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    assert_mutation_fails(PATTERN, name, spec, cases, shared_cache, tmp_path)


def test_a_missing_wait_fails_the_same_way_every_time(spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS["lsa-missing-wait"]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    outcomes = {(o.status, o.reason) for o in
                (emulate_only(broken, spec, cases, shared_cache, tmp_path / str(i)) for i in range(4))}
    assert len(outcomes) == 1
    assert next(iter(outcomes))[0] is ds.Status.WRONG_RESULT


def test_gin_credit_of_the_next_call_never_stands_in_for_a_chunk_in_flight(spec, cases, shared_cache, tmp_path):
    # per_peer_signal counts a peer's credit and its chunks on one slot. With the chunks on the
    # issuing CTA's context, a peer already in the next call (calls back to back) could land its
    # credit before a chunk of this call, and the unpack read RECV early (call 2, world 4).
    # One context per peer keeps the credit behind the chunks.
    src = PATTERN.render(ds.DesignPoint.parse_key("gin/split_put_wait/per_peer_signal/cta/4K/4"))
    intact = emulate_only(src, spec, cases, shared_cache, tmp_path / "intact")
    assert intact.status is ds.Status.OK, intact.reason
    per_cta = mutate(src, "cuco_gin_put(c, gin_ctx_of(peer), peer,",
                     "cuco_gin_put(c, (int)(blockIdx.x % CUCO_GIN_CONTEXTS), peer,")
    broken = emulate_only(per_cta, spec, cases, shared_cache, tmp_path / "per_cta")
    assert broken.status is ds.Status.WRONG_RESULT, broken.reason


def test_an_intact_candidate_is_scored_on_its_memory_traffic_below_the_ceiling(evaluator):
    point = ds.DesignPoint.parse_key("lsa/split_put_wait/per_peer_signal/warp/64K/8")
    ev = evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(point), point=point))
    assert ev.status is ds.Status.OK, ev.reason
    assert ev.observed_point == point.key()  # per-peer waits on n-1 slots: the emulator sees the declared point
    assert ev.features.tensor_core_flop_share == 0.0 and not ev.features.tensor_core  # no GEMM to credit
    hw, spec = ds.get_profile("H100"), evaluator.spec
    for timing, shape in zip(ev.timings, spec.shapes):
        est = ds.estimate(PATTERN.cost(shape.dims, spec.target_world, spec.dtype), point, spec.target_world, hw,
                          spec.dtype.value, ev.features)
        assert timing.seconds == pytest.approx(est.simulated) and est.bound <= est.simulated
        assert est.speedup <= est.ceiling


def test_no_kernel_runs_the_gemm_tile_and_the_model_credits_no_flops():
    for p in ds.valid_points(PATTERN, ds.get_profile("H100"))[::97]:
        assert "cuco_gemm" not in PATTERN.render(p), p.key()
    cost, hw = PATTERN.cost(LLAMA_Q, 8, ds.DType.BF16), ds.get_profile("H100")
    point = ds.DesignPoint.parse_key("lsa/stream_overlap/per_tile_signal/warp/256K/16")
    tc, scalar = (ds.estimate(cost, point, 8, hw, "bf16", f) for f in (TENSOR_CORE_TYPICAL, SCALAR_TYPICAL))
    assert tc.simulated == scalar.simulated  # tensor cores change nothing without FLOPs
    assert tc.t_comp == pytest.approx(cost.hbm_bytes / hw.hbm_bytes_per_s)  # read x, write y at HBM speed
    assert tc.baseline_comp == pytest.approx(cost.hbm_bytes / (hw.hbm_bytes_per_s * 0.9))  # pack/unpack copies
    assert tc.bound <= tc.simulated < tc.baseline and tc.speedup <= tc.ceiling


def test_cost_matches_hand_computation():
    c = PATTERN.cost(LLAMA_Q, 8, ds.DType.BF16)
    x = 4096 * 32 * 128 * 2  # x_r [1, 32768/8, 32, 128] bf16: 32 MiB
    assert x == 2**25 and c.flops == 0
    assert (c.hbm_bytes, c.comm_bytes, c.collective) == (2 * x, x, "alltoall")  # read x, write y; S = all of x_r
    assert (c.out_rows, c.out_cols, c.local_fraction, c.pipeline_stages) == (32768, 4 * 128, 1 / 8, 7)
    batched = PATTERN.cost({"b": 4, "s": 8192, "h": 32, "d": 128}, 8, ds.DType.FP32)
    assert batched.comm_bytes == 4 * 1024 * 32 * 128 * 4 and batched.out_rows == 4 * 8192


def test_symmetric_buffer_holds_send_and_recv():
    assert PATTERN.symm_bytes({"b": 3, "s": 88, "h": 4, "d": 36}, 4, ds.DType.BF16) == 2 * 3 * 22 * 4 * 36 * 2


def test_dims_that_do_not_fit_are_reported():
    assert PATTERN.dim_problems({"b": 1, "s": 30, "h": 8, "d": 8}, 4) == [
        "s=30 is not divisible by world size 4 (the sequence is split across the ranks)"]
    assert "head count" in PATTERN.dim_problems({"b": 1, "s": 32, "h": 6, "d": 8}, 4)[0]
    assert "missing" in PATTERN.dim_problems({"s": 32, "h": 8, "d": 8}, 2)[0]
    assert "at least 1" in PATTERN.dim_problems({"b": 0, "s": 32, "h": 8, "d": 8}, 2)[0]
    assert PATTERN.dim_problems({"b": 2, "s": 32, "h": 8, "d": 8}, 4) == []


def test_what_is_not_rendered_says_why():
    assert ds.Backend.MULTIMEM not in PATTERN.supported["backend"]  # nothing to reduce or broadcast
    why = PATTERN.excluded(ds.DesignPoint.parse_key("lsa/split_put_wait/per_tile_signal/thread/4K/16"))
    assert "never send anything" in why
    assert PATTERN.excluded(ds.DesignPoint.parse_key("lsa/split_put_wait/per_tile_signal/thread/4K/8")) is None


def test_gloo_reference_matches_single_process(cases):
    assert_gloo_reference_is_the_exchange(cases, seq_to_head, lambda w: (3, 88 // w, 4, 36),
                                          lambda w: (3, 88, 4 // w, 36))

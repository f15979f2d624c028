"""The reduce-scatter + residual + RMSNorm family: a seeded sample of its valid points builds (nvcc,
nccl backend) and passes emulation at 2 and 4 ranks, and so does one point of every backend,
placement and sync scope at a shape of many chunks; a missing wait or barrier, a wrong peer offset,
a dropped chunk or a norm over the wrong rows fails emulation, every time, on every backend with
device-side synchronisation; cost() matches hand-computed figures; the gloo reference matches a
single-process computation.

The family has no GEMM (the row-parallel GEMM that made the partials ran elsewhere), so the
tensor-core test of the other families does not apply: no kernel calls the GEMM tile, and a
candidate is credited as elementwise (scalar) work, which its memory traffic bounds anyway.
scripts/check_all_points.py checks every point."""

import random
from pathlib import Path

import numpy as np
import pytest

import design_space as ds
from evaluator import emulate
from tests.kernels.families.family_helpers import (assert_sample_passes, emulate_only, mutate, reference_cases,
                                                    sampled)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "reducescatter_rmsnorm"
PATTERN = ds.get_pattern("reducescatter_rmsnorm")
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# Row blocks of 20 and 10 rows of 520 bf16 elements (1040 B): 3 rows per 4K chunk, so a block
# holds 7 or 4 chunks, the last one short; with the norm and the residual.
MANY_ROWS = ds.ShapeCase(name="many-rows", dims={"m": 40, "n": 520, "rmsnorm": 1, "residual": 1})


@pytest.mark.slow  # 24 emulations (~70 s): the default run keeps the seeded sample
def test_every_backend_placement_and_sync_scope_passes(spec, shared_cache, tmp_path):
    one = spec.model_copy(update={"emulation_shapes": (MANY_ROWS,)})
    cases = reference_cases(one, shared_cache)
    combos: dict = {}
    for p in ds.valid_points(PATTERN, ds.get_profile("H100")):
        combos.setdefault((p.backend.value, p.placement.value, p.sync_scope.value), []).append(p)
    rng = random.Random(5)
    failures = []
    for combo in sorted(combos):
        p = rng.choice([q for q in combos[combo] if q.chunk_bytes == 4096])
        out = emulate_only(PATTERN.render(p), one, cases, shared_cache, tmp_path / p.key().replace("/", "_"))
        if out.status is not ds.Status.OK:
            failures.append(f"{p.key()}: {out.status.value} {out.reason}")
    assert len(combos) == 24 and not failures, failures


# (point, text, replacement): per backend with device-side synchronisation, a missing wait (or
# barrier), a wrong peer offset, a dropped chunk and a norm over the wrong rows.
_SCALE = "scale_row(c, p, row, inv,"
_WRONG_ROWS = "scale_row(c, p, row + 1 < p.shard ? row + 1 : row, inv,"  # row r's 1/rms on row r + 1
_DST = "return (size_t)recv_off(p, p.rank, chunk_lo(p, ch)) * sizeof(cuco_t);"
_WRONG_DST = "return (size_t)recv_off(p, (p.rank + 1) % p.world, chunk_lo(p, ch)) * sizeof(cuco_t);"
_PEER_WAIT = "for (int i = 1; i < p.world; ++i) cuco_wait(c, (p.rank + i) % p.world, before + (uint64_t)ch + 1);"
MUTATIONS = {
    "lsa-missing-wait": ("lsa/fused_persistent/per_tile_signal/cta/4K/2", "    cuco_wait(c, slot, c.epoch);\n", ""),
    "lsa-missing-peer-wait": ("lsa/stream_overlap/per_peer_signal/warp/4K/2", _PEER_WAIT, "(void)before;"),
    "lsa-missing-barrier": ("lsa/stream_overlap/global_barrier/warp/4K/4",
                            "    barrier_kernel<<<1, 32, 0, g_side>>>(c, ch, ch + 1);", ""),
    "lsa-wrong-peer-offset": ("lsa/split_put_wait/per_tile_signal/thread/4K/1", _DST, _WRONG_DST),
    "lsa-dropped-chunk": ("lsa/sequential/global_barrier/warp/4K/2",
                          "const int64_t items = (int64_t)(p.world - 1) * (ch1 - ch0);",
                          "const int64_t items = (int64_t)(p.world - 1) * (ch1 - ch0) - 1;"),
    "lsa-norm-wrong-rows": ("lsa/stream_overlap/per_tile_signal/cta/16K/1", _SCALE, _WRONG_ROWS),
    "gin-missing-wait": ("gin/split_put_wait/per_tile_signal/warp/4K/2", "    cuco_gin_wait(c, slot, c.epoch);\n", ""),
    "gin-wrong-peer-offset": ("gin/fused_persistent/per_tile_signal/cta/4K/2", _DST, _WRONG_DST),
    "gin-dropped-chunk": ("gin/stream_overlap/per_tile_signal/thread/4K/1",  # the owner waits for it forever
                          "const int64_t items = (int64_t)(p.world - 1) * (ch1 - ch0);",
                          "const int64_t items = (int64_t)(p.world - 1) * (ch1 - ch0) - 1;"),
    "gin-norm-wrong-rows": ("gin/sequential/global_barrier/cta/4K/1", _SCALE, _WRONG_ROWS),
    "multimem-missing-wait": ("multimem/fused_persistent/per_tile_signal/warp/4K/2",
                              "    if (group_lane() == 0) wait_staged(c, p, ch);\n", ""),
    "multimem-missing-peer-wait": ("multimem/stream_overlap/per_peer_signal/cta/4K/2",
                                   "for (int i = 0; i < p.world; ++i) cuco_wait(c, (p.rank + i) % p.world, before + "
                                   "(uint64_t)ch + 1);", "(void)before;"),
    "multimem-wrong-peer-offset": ("multimem/stream_overlap/per_tile_signal/thread/4K/1",  # the next rank's rows
                                   "const int64_t first = stage_off(p, p.rank, row)",
                                   "const int64_t first = stage_off(p, (p.rank + 1) % p.world, row)"),
    "multimem-dropped-chunk": ("multimem/sequential/global_barrier/cta/4K/1",
                               "const int64_t items = (int64_t)p.world * (ch1 - ch0);\n  for",
                               "const int64_t items = (int64_t)p.world * (ch1 - ch0) - 1;\n  for"),
    "multimem-norm-wrong-rows": ("multimem/split_put_wait/per_tile_signal/cta/4K/2", _SCALE, _WRONG_ROWS),
    "copy_engine-missing-wait": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1",
                                 "    cuco_wait(c, slot, c.epoch);\n", ""),
    "copy_engine-missing-peer-wait": ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1", _PEER_WAIT,
                                      "(void)before;"),
    "copy_engine-wrong-peer-offset": ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", _DST,
                                      _WRONG_DST),
    "copy_engine-dropped-chunk": ("copy_engine/sequential/global_barrier/copy_engine/4K/1",
                                  "for (int64_t ch = ch0; ch < ch1; ++ch)\n    for (int i = 1;",
                                  "for (int64_t ch = ch0; ch + 1 < ch1; ++ch)\n    for (int i = 1;"),
    "copy_engine-norm-wrong-rows": ("copy_engine/stream_overlap/global_barrier/copy_engine/16K/1", _SCALE, _WRONG_ROWS),
}


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_synchronisation_or_indexing_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS[name]
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    broken = emulate_only(mutate(intact, old, new), spec, cases, shared_cache, tmp_path / "broken")
    assert broken.status in FAILED, f"{name}: {broken.status.value} {broken.reason}"


def test_a_missing_wait_fails_every_time(evaluator):
    key, old, new = MUTATIONS["lsa-missing-peer-wait"]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    evals = [evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=broken)) for _ in range(5)]
    assert {e.status for e in evals} == {ds.Status.WRONG_RESULT}, [e.reason for e in evals]
    assert len({e.reason for e in evals}) == 1  # the same failure: same case, rank and mismatch count


def test_an_intact_candidate_is_scored_as_elementwise_work_below_the_ceiling(evaluator):
    point = ds.DesignPoint.parse_key("lsa/split_put_wait/per_tile_signal/warp/64K/8")
    ev = evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(point), point=point))
    assert ev.status is ds.Status.OK, ev.reason
    assert ev.features.tensor_core_flop_share == 0.0 and not ev.features.tensor_core  # no GEMM to credit
    hw, spec = ds.get_profile("H100"), evaluator.spec
    for timing, shape in zip(ev.timings, spec.shapes):
        est = ds.estimate(PATTERN.cost(shape.dims, spec.target_world, spec.dtype), point, spec.target_world, hw,
                          spec.dtype.value, ev.features, evaluator.calibration)
        assert timing.seconds == pytest.approx(est.simulated) and est.speedup <= est.ceiling


def test_no_kernel_runs_the_gemm_tile():
    for p in random.Random(3).sample(ds.valid_points(PATTERN, ds.get_profile("H100")), 40):
        assert "cuco_gemm" not in PATTERN.render(p), p.key()


def test_cost_matches_hand_computed_figures():
    # Llama-3-70B at TP=8 with sequence parallelism: M=4096 tokens, N=8192 hidden, bf16; 512 rows per rank.
    c = PATTERN.cost({"m": 4096, "n": 8192, "rmsnorm": 1, "residual": 1}, 8, ds.DType.BF16)
    assert c.flops == 512 * 8192 * (7 + 1 + 4) + 3 * 512 == 50_333_184
    assert c.hbm_bytes == (4096 * 8192 + 512 * 8192 + 8192 + 512 * 8192) * 2 == 83_902_464
    assert (c.collective, c.comm_bytes) == ("reducescatter", 4096 * 8192 * 2)
    assert (c.out_rows, c.out_cols, c.local_fraction) == (512, 8192, 0.0)
    plain = PATTERN.cost({"m": 4096, "n": 8192, "rmsnorm": 2, "residual": 2}, 8, ds.DType.BF16)
    assert plain.flops == 512 * 8192 * 7 and plain.hbm_bytes == (4096 + 512) * 8192 * 2  # a plain reduce-scatter


def test_symmetric_buffer_holds_stage_and_recv():
    assert PATTERN.symm_bytes({"m": 48, "n": 512, "rmsnorm": 1, "residual": 1}, 4, ds.DType.BF16) == 2 * 48 * 512 * 2


def test_dims_that_do_not_fit_are_reported():
    assert PATTERN.dim_problems({"m": 10, "n": 8, "rmsnorm": 1, "residual": 1}, 4) == [
        "m=10 is not divisible by world size 4: rank r keeps rows [r*M/n, (r+1)*M/n)"]
    assert "must be 1 (apply) or 2 (skip)" in PATTERN.dim_problems({"m": 8, "n": 8, "rmsnorm": 3, "residual": 1}, 2)[0]
    assert "missing" in PATTERN.dim_problems({"m": 8, "n": 8}, 2)[0]
    assert PATTERN.dim_problems({"m": 8, "n": 8, "rmsnorm": 2, "residual": 2}, 4) == []


def test_only_designs_that_can_overlap_are_rendered():
    excluded = {key: PATTERN.excluded(ds.DesignPoint.parse_key(key)) for key in (
        "lsa/split_put_wait/global_barrier/cta/4K/1", "lsa/split_put_wait/per_peer_signal/cta/4K/1",
        "gin/stream_overlap/per_peer_signal/cta/4K/1", "multimem/fused_persistent/per_peer_signal/cta/4K/1")}
    assert "sequential one with a second stream" in excluded["lsa/split_put_wait/global_barrier/cta/4K/1"]
    assert all("land in order" in why for key, why in excluded.items() if "per_peer" in key)
    for key in ("lsa/stream_overlap/per_peer_signal/cta/4K/1", "copy_engine/stream_overlap/per_peer_signal/"
                "copy_engine/4K/1", "multimem/split_put_wait/per_tile_signal/warp/4K/1"):
        assert PATTERN.excluded(ds.DesignPoint.parse_key(key)) is None


def _single_process(rank_inputs: list, world: int, dims: dict) -> list:
    """Every rank's y in float64 from all ranks' inputs: this rank's rows of the sum, + R, RMSNorm."""
    total = sum(p.astype(np.float64) for p, _, _ in rank_inputs)
    rows = total.shape[0] // world
    out = []
    for r, (_, gamma, residual) in enumerate(rank_inputs):
        h = total[r * rows:(r + 1) * rows] + (residual.astype(np.float64) if dims["residual"] == 1 else 0.0)
        if dims["rmsnorm"] == 1:
            h = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + 1e-6) * gamma.astype(np.float64)
        out.append(h)
    return out


def test_gloo_reference_matches_a_single_process_computation(cases):
    load = lambda tf: emulate.as_float32(tf.path, tf.dtype, tf.shape)  # noqa: E731
    seen = set()
    for case in cases:
        inputs = [tuple(load(tf) for tf in rd.inputs) for rd in case.ranks]
        assert np.array_equal(inputs[0][1], inputs[1][1])  # gamma is the same on every rank
        assert not np.array_equal(inputs[0][0], inputs[1][0])  # the partials are not
        rms = np.sqrt((inputs[0][0] ** 2).mean(axis=1))
        assert rms.max() > 2 * rms.min()  # rows differ in scale, so a norm over the wrong row shows
        expected = _single_process(inputs, case.world, case.shape.dims)
        for rd, want in zip(case.ranks, expected):
            np.testing.assert_allclose(load(rd.outputs[0]), want, atol=2e-2, rtol=2e-2, err_msg=case.shape.name)
        seen.add((case.shape.dims["rmsnorm"], case.shape.dims["residual"]))
    assert {f for f, _ in seen} == {1, 2} and {r for _, r in seen} == {1, 2}  # both values of each flag


def test_make_inputs_follows_the_pattern_order():
    import importlib.util

    import torch
    module_spec = importlib.util.spec_from_file_location("rsn_reference_under_test", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    inputs = module.make_inputs({"m": 8, "n": 6, "rmsnorm": 1, "residual": 1}, 1, 2, torch.bfloat16,
                                torch.Generator().manual_seed(0))
    assert list(inputs) == list(PATTERN.inputs)
    assert [tuple(t.shape) for t in inputs.values()] == [(8, 6), (6,), (4, 6)]
    assert all(t.dtype is torch.bfloat16 for t in inputs.values())

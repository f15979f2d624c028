"""The all-gather + GEMM family: a seeded sample of its valid points builds (nvcc, nccl backend)
and passes emulation at 2 and 4 ranks; removing a wait or barrier, a wrong offset or a dropped
chunk fails emulation every time; every kernel that computes output tiles runs on tensor cores.
scripts/check_all_points.py checks every point."""

import random
from pathlib import Path

import pytest

import design_space as ds
from tests.kernels.families.family_helpers import (assert_sample_passes, edit_lines, emulate_only,
                                                    gemm_kernels_per_backend, mutate, reference_cases, sampled)

PATTERN = ds.get_pattern("allgather_gemm")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "allgather_gemm"


def _candidate(src: str, point=None) -> ds.Candidate:
    return ds.Candidate(origin=ds.Origin(kind="template" if point else "manual"), source=src, point=point)


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# The spec's emulation shapes hold at most one 64-row tile per shard; this shape holds several
# (shards of 132 and 66 rows, ragged N and K, 4K chunks that straddle tile rows), so waits and
# pipelines that span tile rows are emulated too; with the bias on, as Megatron-LM's layer has it.
SEVERAL_TILE_ROWS = ds.ShapeCase(name="several-tile-rows", dims={"m": 264, "n": 72, "k": 40, "bias": 1})


def test_every_placement_and_sync_scope_passes_with_several_tile_rows(spec, shared_cache, tmp_path):
    wide = spec.model_copy(update={"emulation_shapes": (SEVERAL_TILE_ROWS,)})
    cases = reference_cases(wide, shared_cache)
    combos: dict = {}
    for p in ds.valid_points(PATTERN, ds.get_profile("H100")):
        combos.setdefault((p.placement.value, p.sync_scope.value), []).append(p)
    rng = random.Random(11)
    failures = []
    for combo in sorted(combos):
        p = rng.choice([q for q in combos[combo] if q.chunk_bytes == 4096] or combos[combo])
        out = emulate_only(PATTERN.render(p), wide, cases, shared_cache, tmp_path / p.key().replace("/", "_"))
        if out.status is not ds.Status.OK:
            failures.append(f"{p.key()}: {out.status.value} {out.reason}")
    assert len(combos) >= 9 and not failures, failures


BIAS_LINE = "if (p.bias) ep.bias ="


def test_every_backend_adds_the_bias_and_a_kernel_that_drops_it_fails(spec, shared_cache, tmp_path):
    with_bias = spec.model_copy(update={"emulation_shapes": tuple(
        ds.ShapeCase(name=f"{s.name}-bias", dims={**s.dims, "bias": 1}) for s in spec.emulation_shapes)})
    cases = reference_cases(with_bias, shared_cache)
    rng = random.Random(5)
    points = ds.valid_points(PATTERN, ds.get_profile("H100"))
    failures = []
    for backend in sorted({p.backend.value for p in points}):
        p = rng.choice([q for q in points if q.backend.value == backend])
        src = PATTERN.render(p)
        assert src.count(BIAS_LINE) == 1, p.key()  # in the one tile every output tile goes through
        out = emulate_only(src, with_bias, cases, shared_cache, tmp_path / p.key().replace("/", "_"))
        if out.status is not ds.Status.OK:
            failures.append(f"{p.key()}: {out.status.value} {out.reason}")
    assert not failures, failures
    dropped = emulate_only(edit_lines(src, BIAS_LINE), with_bias, cases, shared_cache, tmp_path / "dropped")
    assert dropped.status is ds.Status.WRONG_RESULT, dropped.reason


def test_a_spec_without_the_bias_dim_reads_as_no_bias_and_needs_no_bias_input():
    assert list(PATTERN.full_dims({"m": 8, "n": 8, "k": 4}).items()) == [("m", 8), ("n", 8), ("k", 4), ("bias", 2)]
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 4}, 2) == []
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 4, "bias": 0}, 2)  # not a flag value
    on, off = (PATTERN.cost({"m": 4096, "n": 28672, "k": 8192, "bias": b}, 8, ds.DType.BF16) for b in (1, 2))
    assert on.hbm_bytes - off.hbm_bytes == 3584 * 2  # bias_r [N/n] read once
    assert off.hbm_bytes == PATTERN.cost({"m": 4096, "n": 28672, "k": 8192}, 8, ds.DType.BF16).hbm_bytes
    assert "bias" in PATTERN.optional_inputs


# (point, text whose lines are dropped): every placement x sync scope the family renders
SYNC_MUTATIONS = [
    ("lsa/sequential/global_barrier/cta/4K/2", "barrier_kernel<<<"),
    ("lsa/stream_overlap/global_barrier/warp/4K/8", "barrier_kernel<<<"),
    ("lsa/stream_overlap/global_barrier/warp/4K/8", "cudaStreamWaitEvent(stream, g_join, 0);  // wait late"),
    ("lsa/stream_overlap/per_peer_signal/warp/64K/2", "cuco_wait("),
    ("lsa/stream_overlap/per_tile_signal/thread/4K/1", "cuco_wait("),
    ("lsa/split_put_wait/global_barrier/cta/16K/4", "barrier_kernel<<<"),
    ("lsa/split_put_wait/per_peer_signal/cta/16K/8", "cuco_wait("),
    ("lsa/split_put_wait/per_tile_signal/warp/4K/8", "cuco_wait("),
    ("lsa/fused_persistent/per_peer_signal/cta/4K/1", "cuco_wait("),
    ("lsa/fused_persistent/per_tile_signal/warp/4K/4", "cuco_wait("),
]


@pytest.mark.parametrize("key, needle", sampled(SYNC_MUTATIONS, [f"{k}-{n[:20]}" for k, n in SYNC_MUTATIONS]))
def test_removing_synchronisation_fails_emulation(evaluator, key, needle):
    point = ds.DesignPoint.parse_key(key)
    intact = PATTERN.render(point)
    assert evaluator.evaluate(_candidate(intact, point)).status is ds.Status.OK
    ev = evaluator.evaluate(_candidate(edit_lines(intact, needle)))
    assert ev.status is ds.Status.WRONG_RESULT, ev.reason
    assert any(c.unwritten > 0 for c in ev.checks if not c.ok)


def test_a_missing_wait_fails_every_time(evaluator):
    broken = edit_lines(PATTERN.render(ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/4K/2")),
                        "cuco_wait(")
    statuses = {evaluator.evaluate(_candidate(broken)).status for _ in range(5)}
    assert statuses == {ds.Status.WRONG_RESULT}


# (point, old text, new text, statuses that count as caught): the other backends' synchronisation,
# a wrong destination offset, a dropped chunk, a tile that reads the wrong rows
BACKEND_MUTATIONS = [
    ("gin/stream_overlap/per_tile_signal/warp/4K/2", "  cuco_gin_wait(c, slot, at_least);\n", "", {"wrong_result"}),
    ("gin/split_put_wait/global_barrier/cta/16K/2", "  barrier_kernel<<<1, 32, 0, g_side>>>(c);\n", "",
     {"wrong_result"}),
    ("multimem/fused_persistent/per_peer_signal/cta/4K/2", "  cuco_wait(c, slot, at_least);\n", "", {"wrong_result"}),
    ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", "  cuco_wait(c, slot, at_least);\n", "",
     {"wrong_result"}),
    ("host_nccl/stream_overlap/global_barrier/cta/4K/1", "    cudaStreamWaitEvent(stream, g_chunk_done[ch], 0);\n",
     "", {"wrong_result"}),
    ("lsa/split_put_wait/per_tile_signal/cta/4K/2", "(size_t)(c.rank * p.shard + r0) * row_bytes",
     "(size_t)r0 * row_bytes", {"wrong_result", "timeout"}),
    ("lsa/stream_overlap/global_barrier/warp/4K/2", "ch < nch; ++ch) comm_launch", "ch + 1 < nch; ++ch) comm_launch",
     {"wrong_result"}),
    ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1", "ch < nch; ++ch) comm_launch",
     "ch + 1 < nch; ++ch) comm_launch", {"timeout"}),
    # a peer's tile reads that peer's rows from chunk 0 of the per-chunk all-gathers
    ("host_nccl/stream_overlap/global_barrier/cta/4K/1", "(ch * rows * c.world + src * in_chunk + lo % rows)",
     "(src * in_chunk + lo % rows)", {"wrong_result"}),
]


@pytest.mark.parametrize("key, old, new, caught", sampled(
    BACKEND_MUTATIONS, [f"{k.split('/')[0]}-{k.split('/')[1]}-{o.strip()[:18]}" for k, o, _, _ in BACKEND_MUTATIONS]))
def test_broken_transfers_of_every_backend_fail_emulation(evaluator, key, old, new, caught):
    point = ds.DesignPoint.parse_key(key)
    source = PATTERN.render(point)
    assert evaluator.evaluate(_candidate(source, point)).status is ds.Status.OK
    ev = evaluator.evaluate(_candidate(mutate(source, old, new)))
    assert ev.status.value in caught, ev.reason


def test_every_backend_renders_its_own_mechanism():
    calls = {"lsa": "cuco_put_", "gin": "cuco_gin_put(", "multimem": "cuco_mm_st2(", "copy_engine": "cuco_ce_put(",
             "host_nccl": "cuco_coll_allgather("}
    points = ds.valid_points(PATTERN, ds.get_profile("H100"))
    for backend, call in calls.items():
        mine = [p for p in points if p.backend.value == backend]
        assert mine, backend
        for p in mine[:: max(1, len(mine) // 20)]:
            src = PATTERN.render(p)
            assert call in src, (p.key(), call)
            others = [c for b, c in calls.items() if b != backend and c in src.split("EVOLVE-BLOCK-START")[1]]
            assert not others, (p.key(), others)


def test_every_output_tile_goes_through_the_gemm_tile():
    for p in random.Random(3).sample(ds.valid_points(PATTERN, ds.get_profile("H100")), 40):
        src = PATTERN.render(p)
        assert src.count("cuco_gemm_tile<Cfg>(") == 1 and "cuco_gemm_store(acc" in src, p.key()
        assert "__shared__ float" not in src and "+= As[" not in src, p.key()  # no scalar tile of its own


# Kernels that compute output tiles (the others only move data or wait).
GEMM_KERNELS = ("gemm_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert tiles, key
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        # ptxas keeps them at 128 registers (4 CTAs per SM); a wait loop around the tile may spill one
        assert all(k.spill_stores <= 8 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])

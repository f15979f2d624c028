"""The GEMM + reduce-scatter family: a seeded sample of its valid points builds (nvcc, nccl
backend) and passes emulation at 2 and 4 ranks; broken synchronisation, a wrong peer offset, a
dropped chunk or a misplaced partial fail emulation every time; every kernel that computes
partial tiles runs on tensor cores; the cost model and the reference are checked by hand.
scripts/check_all_points.py checks every point."""

import importlib.util
import multiprocessing as mp
import random
from pathlib import Path

import pytest
import torch

import design_space as ds
from tests.kernels.families.family_helpers import (assert_sample_passes, edit_lines, emulate_only,
                                                    gemm_kernels_per_backend, reference_cases, sampled)

PATTERN = ds.get_pattern("gemm_reducescatter")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gemm_reducescatter"


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# The spec's emulation shapes hold at most one 64-row tile per row block; this shape holds several
# (row blocks of 132 and 66 rows, ragged N and K, 4K chunks that straddle tile rows), so waits and
# pipelines that span tile rows are emulated too.
SEVERAL_TILE_ROWS = ds.ShapeCase(name="several-tile-rows", dims={"m": 264, "n": 72, "k": 40})


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


# (point, text to find, replacement or "" to drop the line): each backend with device-side sync
MUTATIONS = [
    ("lsa/fused_persistent/per_tile_signal/cta/4K/2", "cuco_wait(c, src * MAX_CHUNKS", ""),  # missing wait
    ("lsa/stream_overlap/global_barrier/warp/4K/4", "barrier_kernel<<<", ""),  # missing barrier
    ("lsa/split_put_wait/per_peer_signal/thread/4K/1",  # wrong peer offset: lands in the wrong RECV slot
     "recv_off(p, p.rank, chunk_lo(p, ch))", "recv_off(p, (p.rank + 1) % p.world, chunk_lo(p, ch))"),
    ("lsa/sequential/global_barrier/warp/4K/2",  # a dropped chunk: the last item is never pushed
     "items = (int64_t)(p.world - 1) * nch;", "items = (int64_t)(p.world - 1) * nch - 1;"),
    ("gin/split_put_wait/per_peer_signal/warp/4K/2", "cuco_gin_wait(", ""),
    ("multimem/stream_overlap/per_tile_signal/thread/4K/1", "wait_partials(c, p, ch);", ""),
    ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1",  # the stream no longer waits
     "cuco_ce_wait(c, (p.rank + i) % p.world, c.epoch * (uint64_t)nch, stream);", "(void)i;"),
    # chunk-major STAGE: a partial tile's rows all land on its first row's place
    ("host_nccl/stream_overlap/global_barrier/cta/4K/1", "stage_off(p, x.d, x.lo + r)", "stage_off(p, x.d, x.lo)"),
]
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def _candidate(src: str, point=None) -> ds.Candidate:
    return ds.Candidate(origin=ds.Origin(kind="template" if point else "manual"), source=src, point=point)


@pytest.mark.parametrize("key, old, new", sampled(MUTATIONS, [f"{k.split('/')[0]}-{o[:24]}" for k, o, _ in MUTATIONS]))
def test_broken_synchronisation_or_indexing_fails_emulation(evaluator, key, old, new):
    point = ds.DesignPoint.parse_key(key)
    intact = PATTERN.render(point)
    assert evaluator.evaluate(_candidate(intact, point)).status is ds.Status.OK
    ev = evaluator.evaluate(_candidate(edit_lines(intact, old, new)))
    assert ev.status in FAILED, ev.reason


def test_a_missing_wait_fails_the_same_way_every_time(evaluator):
    broken = edit_lines(PATTERN.render(ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/4K/2")),
                     "cuco_wait(c, src * MAX_CHUNKS", "")
    statuses = {evaluator.evaluate(_candidate(broken)).status for _ in range(5)}
    assert statuses == {ds.Status.WRONG_RESULT}


def test_every_partial_tile_goes_through_the_gemm_tile():
    for p in random.Random(3).sample(ds.valid_points(PATTERN, ds.get_profile("H100")), 40):
        src = PATTERN.render(p)
        assert src.count("cuco_gemm_tile<Cfg>(") == 1, p.key()
        assert "__shared__ float" not in src and "+= As[" not in src, p.key()  # no scalar tile of its own


# Kernels that compute partial tiles (finish_kernel: the owner's own partial; the others only
# move data, reduce or wait).
GEMM_KERNELS = ("gemm_kernel", "finish_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert tiles, key
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        # ptxas keeps them at 128 registers (4 CTAs per SM); a wait loop around the tile may spill one
        assert all(k.spill_stores <= 8 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])


def test_cost_matches_hand_computed_figures():
    # Llama-3-70B down-projection at TP=8: M=4096, N=8192, K=28672, bf16; K/n = 3584.
    cost = PATTERN.cost({"m": 4096, "n": 8192, "k": 28672}, 8, ds.DType.BF16)
    assert cost.flops == 2 * 4096 * 8192 * 3584 == 240_518_168_576
    assert cost.hbm_bytes == (4096 * 3584 + 3584 * 8192 + 4096 * 8192) * 2 == 155_189_248
    assert cost.collective == "reducescatter"
    assert cost.comm_bytes == 4096 * 8192 * 2 == 67_108_864
    assert (cost.out_rows, cost.out_cols, cost.local_fraction) == (4096, 8192, 1 / 8)


DIMS = {"m": 8, "n": 6, "k": 10}


def _load_reference():
    module_spec = importlib.util.spec_from_file_location("gemm_reducescatter_reference", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _reference_rank(rank: int, init: str, queue) -> None:
    import torch.distributed as dist
    reference = _load_reference()
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        inputs = reference.make_inputs(DIMS, rank, 2, torch.float32, torch.Generator().manual_seed(rank))
        out = reference.reference(inputs, DIMS, None)["c"]
        # numpy, not tensors: torch would share their storage with a process about to exit
        queue.put((rank, {k: v.numpy() for k, v in inputs.items()}, out.numpy()))
    finally:
        dist.destroy_process_group()


def test_reference_at_world_2_matches_a_single_process_sum(tmp_path):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_reference_rank, args=(r, f"file://{tmp_path / 'pg'}", queue)) for r in (0, 1)]
    for p in procs:
        p.start()
    got = {}
    for _ in procs:
        r, inputs, out = queue.get(timeout=60)
        got[r] = ({k: torch.from_numpy(v) for k, v in inputs.items()}, torch.from_numpy(out))
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    total = sum(got[r][0]["a"] @ got[r][0]["b"] for r in (0, 1))  # [M, N]
    assert got[0][0]["a"].shape == (8, 5) and got[0][0]["b"].shape == (5, 6)
    assert not torch.equal(got[0][0]["a"], got[1][0]["a"])  # non-uniform across ranks
    for r in (0, 1):
        torch.testing.assert_close(got[r][1], total[4 * r:4 * (r + 1)])

"""The GEMM + all-gather family: a seeded sample of its valid points builds (nvcc, nccl backend) and
passes emulation at 2 and 4 ranks; a missing wait or barrier, a wrong peer offset, a dropped chunk
or tile, a misplaced block fail emulation every time; every kernel that computes output tiles runs
on tensor cores; the cost model and the reference are checked by hand.
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

PATTERN = ds.get_pattern("gemm_allgather")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gemm_allgather"


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# The spec's emulation shapes hold one 64-row band; this one holds three (150 rows, the last band
# ragged; N/n of 36 and 18 columns; 4K chunks of 56 or 113 rows that straddle bands), so waits and
# pipeline steps that span bands are emulated too.
SEVERAL_BANDS = ds.ShapeCase(name="several-bands", dims={"m": 150, "n": 72, "k": 40, "bias": 1})


def test_every_placement_and_sync_scope_passes_with_several_bands(spec, shared_cache, tmp_path):
    wide = spec.model_copy(update={"emulation_shapes": (SEVERAL_BANDS,)})
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


_BAND_WAIT = "cuco_wait(c, READY_BASE + (int)b, c.epoch * (uint64_t)col_tiles(p));"
# (point, text whose lines are dropped, or its replacement): every backend with device-side sync
MUTATIONS = {
    "lsa-missing-wait": ("lsa/fused_persistent/per_tile_signal/cta/4K/2", "cuco_wait(c, src * MAX_CHUNKS", ""),
    "lsa-missing-barrier": ("lsa/stream_overlap/global_barrier/warp/4K/4", "barrier_kernel<<<", ""),
    "lsa-wrong-peer-offset": ("lsa/split_put_wait/per_peer_signal/thread/4K/1",  # lands in another rank's block
                              "cuco_put_thread(c, peer, off,",
                              "cuco_put_thread(c, peer, chunk_off(p, (p.rank + 1) % p.world, ch),"),
    "lsa-dropped-chunk": ("lsa/sequential/global_barrier/warp/4K/2",  # the last item is never pushed
                          "item < items; item += g.count", "item + 1 < items; item += g.count"),
    "gin-missing-wait": ("gin/split_put_wait/per_peer_signal/warp/4K/2", "cuco_gin_wait(", ""),
    "multimem-missing-wait": ("multimem/stream_overlap/per_tile_signal/thread/4K/1",
                              "cuco_wait(c, src * MAX_CHUNKS", ""),
    "copy_engine-missing-wait": ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1",  # the stream no longer waits
                                 "cuco_ce_wait(c, (p.rank + i) % p.world, c.epoch, stream);", "(void)i;"),
    "copy_engine-missing-tile-wait": ("copy_engine/stream_overlap/per_tile_signal/copy_engine/16K/1",
                                      "cuco_wait(c, src * MAX_CHUNKS", ""),
    # pushes that run beside the GEMM no longer wait for their chunk's bands to be computed
    "lsa-missing-band-wait": ("lsa/split_put_wait/per_tile_signal/cta/4K/2", _BAND_WAIT, "(void)b;"),
    "multimem-missing-band-wait": ("multimem/fused_persistent/per_peer_signal/warp/4K/2", _BAND_WAIT, "(void)b;"),
    "copy_engine-missing-band-wait": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1",
                                      "cuco_ce_wait(c, READY_BASE + (int)b", ""),
    # chunk-major ALL: a tile's rows all land on its first row's place
    "host_nccl-chunk-layout": ("host_nccl/stream_overlap/global_barrier/cta/4K/1",
                               "A[all_off(p, p.rank, x.lo + r)", "A[all_off(p, p.rank, x.lo)"),
    "gemm-dropped-tile": ("gin/fused_persistent/per_tile_signal/cta/4K/2",  # each worker skips its last tile
                          "t < total; t += workers", "t + workers < total; t += workers"),
    "collect-wrong-block": ("lsa/split_put_wait/global_barrier/cta/4K/2",  # peers' blocks copied over the own one
                            "cuco_t* Y = static_cast<cuco_t*>(c.out[0]) + src * p.Nl;",
                            "cuco_t* Y = static_cast<cuco_t*>(c.out[0]) + p.rank * p.Nl;"),
}
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_synchronisation_or_indexing_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS[name]
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    broken = emulate_only(edit_lines(intact, old, new), spec, cases, shared_cache, tmp_path / "broken")
    assert broken.status in FAILED, broken.reason


def test_a_missing_wait_fails_the_same_way_every_time(spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS["lsa-missing-wait"]
    broken = edit_lines(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    outcomes = {(o.status, o.reason) for o in
                (emulate_only(broken, spec, cases, shared_cache, tmp_path / str(i)) for i in range(5))}
    assert len(outcomes) == 1
    assert next(iter(outcomes))[0] is ds.Status.WRONG_RESULT


def test_every_output_tile_goes_through_the_gemm_tile():
    for p in random.Random(3).sample(ds.valid_points(PATTERN, ds.get_profile("H100")), 40):
        src = PATTERN.render(p)
        assert src.count("cuco_gemm_tile<Cfg>(") == 1, p.key()
        assert "__shared__ float" not in src and "+= As[" not in src, p.key()  # no scalar tile of its own


# Kernels that compute output tiles (the others only move data, copy or wait).
GEMM_KERNELS = ("gemm_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert tiles, key
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        # the persistent kernel's wait and push loops beside the tile may spill a few registers
        assert all(k.spill_stores <= 8 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])


def test_cost_matches_hand_computed_figures():
    # Llama-3-70B-sized MLP up-projection at TP=8 with bias: M=4096, N=28672, K=8192, bf16; N/n = 3584.
    cost = PATTERN.cost({"m": 4096, "n": 28672, "k": 8192, "bias": 1}, 8, ds.DType.BF16)
    assert cost.flops == 2 * 4096 * 3584 * 8192 == 240_518_168_576
    # X, W_r, bias_r read; Y_r written; the 7 peers' blocks read from ALL and written into Y
    assert cost.hbm_bytes == (4096 * 8192 + 8192 * 3584 + 3584 + 4096 * 3584 + 2 * 4096 * 25088) * 2 == 566_238_208
    assert cost.collective == "allgather"
    assert cost.comm_bytes == 4096 * 28672 * 2 == 234_881_024
    assert (cost.out_rows, cost.out_cols, cost.local_fraction) == (4096, 3584, 1 / 8)
    no_bias = PATTERN.cost({"m": 4096, "n": 28672, "k": 8192, "bias": 2}, 8, ds.DType.BF16)
    assert cost.hbm_bytes - no_bias.hbm_bytes == 3584 * 2


def test_dims_that_do_not_fit_are_reported():
    assert PATTERN.dim_problems({"m": 8, "n": 6, "k": 4, "bias": 1}, 4)  # N not divisible
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 4}, 2)  # the flag is missing
    assert PATTERN.dim_problems({"m": 8, "n": 8, "k": 4, "bias": 0}, 2)  # not a flag value
    assert PATTERN.dim_problems({"m": 7, "n": 8, "k": 5, "bias": 2}, 4) == []  # M and K need not divide


def test_a_sequential_library_all_gather_keeps_one_chunk_size():
    why = PATTERN.excluded(ds.DesignPoint.parse_key("host_nccl/sequential/global_barrier/cta/4K/1"))
    assert why and "chunk_bytes has no effect" in why
    assert PATTERN.excluded(ds.DesignPoint.parse_key("host_nccl/sequential/global_barrier/cta/4096K/1")) is None
    assert PATTERN.excluded(ds.DesignPoint.parse_key("host_nccl/stream_overlap/global_barrier/cta/4K/1")) is None


DIMS = {"m": 5, "n": 6, "k": 7}


def _load_reference():
    module_spec = importlib.util.spec_from_file_location("gemm_allgather_reference", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _reference_rank(rank: int, init: str, queue) -> None:
    import torch.distributed as dist
    reference = _load_reference()
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        result = []
        for bias in (1, 2):
            dims = {**DIMS, "bias": bias}
            inputs = reference.make_inputs(dims, rank, 2, torch.float32, torch.Generator().manual_seed(rank))
            out = reference.reference(inputs, dims, None)["y"]
            # numpy, not tensors: torch would share their storage with a process about to exit
            result.append(({k: v.numpy() for k, v in inputs.items()}, out.numpy()))
        queue.put((rank, result))
    finally:
        dist.destroy_process_group()


def test_reference_at_world_2_matches_a_single_process_computation(tmp_path):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_reference_rank, args=(r, f"file://{tmp_path / 'pg'}", queue)) for r in (0, 1)]
    for p in procs:
        p.start()
    got = {}
    for _ in procs:
        r, result = queue.get(timeout=60)
        got[r] = [({k: torch.from_numpy(v) for k, v in ins.items()}, torch.from_numpy(out)) for ins, out in result]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    for i, with_bias in enumerate((True, False)):
        ins = [got[r][i][0] for r in (0, 1)]
        assert ins[0]["x"].shape == (5, 7) and ins[0]["w"].shape == (7, 3) and ins[0]["bias"].shape == (3,)
        assert torch.equal(ins[0]["x"], ins[1]["x"])  # replicated activations
        assert not torch.equal(ins[0]["w"], ins[1]["w"]) and not torch.equal(ins[0]["bias"], ins[1]["bias"])
        blocks = [x["x"] @ x["w"] + (x["bias"] if with_bias else 0) for x in ins]
        expected = torch.cat(blocks, dim=1)  # [M, N]: rank 0's columns, then rank 1's
        for r in (0, 1):
            torch.testing.assert_close(got[r][i][1], expected)


def test_make_inputs_follows_the_pattern_order():
    module = _load_reference()
    inputs = module.make_inputs({"m": 3, "n": 8, "k": 4, "bias": 1}, 1, 4, torch.bfloat16,
                                torch.Generator().manual_seed(0))
    assert list(inputs) == list(PATTERN.inputs)
    assert inputs["x"].shape == (3, 4) and inputs["w"].shape == (4, 2) and inputs["bias"].shape == (2,)
    assert all(t.dtype is torch.bfloat16 for t in inputs.values())

"""The tensor-parallel MLP family (all-gather -> GEMM -> activation -> GEMM -> reduce-scatter): a
seeded sample of its valid points builds (nvcc, nccl backend) and passes emulation at 2 and 4
ranks; every backend, placement and sync scope passes with several tile rows per shard; broken
synchronisation in either phase, a fused kernel that does not wait for U, a wrong peer offset, a
dropped chunk or tile and a wrong activation fail emulation every time; every kernel that computes
tiles runs on tensor cores; the two-phase cost, the dims and the gloo reference are checked by hand.
scripts/check_all_points.py checks every point."""

import importlib.util
import multiprocessing as mp
import random
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import design_space as ds
from tests.kernels.families.family_helpers import (assert_sample_passes, edit_lines, emulate_only,
                                                    gemm_kernels_per_backend, mutate, reference_cases, sampled)

PATTERN = ds.get_pattern("tp_mlp")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tp_mlp"
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# The spec's emulation shards fit one 64-row tile; these hold two or three (shards of 66 and 33
# rows, 144-byte rows so 4K chunks straddle tile rows), so U waits of a fused kernel, pipelines and
# waits that span tile rows run too; SwiGLU, the activation with the most work per U tile.
SEVERAL_TILE_ROWS = ds.ShapeCase(name="several-tile-rows", dims={"m": 132, "h": 72, "f": 40, "act": 3})


# Default: one point per placement and sync scope (9, ~5 s each); slow: one per backend too (35).
@pytest.mark.parametrize("dims, expected", [(("placement", "sync_scope"), 9),
                                            pytest.param(("backend", "placement", "sync_scope"), 35,
                                                         marks=pytest.mark.slow)], ids=["placements", "backends"])
def test_every_placement_and_sync_scope_passes_with_several_tile_rows(dims, expected, spec, shared_cache, tmp_path):
    wide = spec.model_copy(update={"emulation_shapes": (SEVERAL_TILE_ROWS,)})
    cases = reference_cases(wide, shared_cache)
    combos: dict = {}
    for p in ds.valid_points(PATTERN, ds.get_profile("H100")):
        combos.setdefault(tuple(getattr(p, d).value for d in dims), []).append(p)
    rng = random.Random(11)
    failures = []
    for combo in sorted(combos):
        p = rng.choice([q for q in combos[combo] if q.chunk_bytes == 4096] or combos[combo])
        out = emulate_only(PATTERN.render(p), wide, cases, shared_cache, tmp_path / p.key().replace("/", "_"))
        if out.status is not ds.Status.OK:
            failures.append(f"{p.key()}: {out.status.value} {out.reason}")
    assert len(combos) == expected and not failures, failures


# name -> (point, text, replacement: "" drops every line holding the text). Both phases of every
# backend with device-side synchronisation, the fused kernel's cross-phase wait, indexing, tiles.
MUTATIONS = {
    "lsa-up-missing-wait": ("lsa/split_put_wait/per_tile_signal/thread/4K/1",
                            "wait_signal(c, (int)(src * MAX_CHUNKS + ch), c.epoch);", ""),
    "lsa-down-missing-wait": ("lsa/split_put_wait/per_tile_signal/thread/4K/1",
                              "cuco_wait(c, DOWN_SLOTS + src * MAX_CHUNKS + (int)ch, c.epoch);", "(void)src;"),
    "lsa-fused-no-u-wait": ("lsa/fused_persistent/per_tile_signal/warp/4K/2",
                            "cuco_wait(c, U_READY_BASE + ", "(void)(c, U_READY_BASE + "),
    "lsa-missing-barrier": ("lsa/stream_overlap/global_barrier/warp/4K/4", "barrier_kernel<<<", ""),
    "lsa-wrong-peer-offset": ("lsa/split_put_wait/per_peer_signal/thread/4K/1",  # lands in the wrong RECV slot
                              "recv_off(p, p.rank, chunk_lo(p, ch))",
                              "recv_off(p, (p.rank + 1) % p.world, chunk_lo(p, ch))"),
    "lsa-up-dropped-chunk": ("lsa/sequential/global_barrier/warp/4K/2",  # x's last chunk is never pushed
                             "items = (int64_t)(c.world - 1) * nch;", "items = (int64_t)(c.world - 1) * nch - 1;"),
    "gin-missing-wait": ("gin/split_put_wait/per_peer_signal/warp/4K/2", "cuco_gin_wait(", ""),
    "multimem-missing-wait": ("multimem/stream_overlap/per_tile_signal/thread/4K/1", "wait_partials(c, p, ch);", ""),
    "multimem-fused-no-u-wait": ("multimem/fused_persistent/per_peer_signal/cta/4K/2",
                                 "cuco_wait(c, U_READY_BASE + ", "(void)(c, U_READY_BASE + "),
    "copy_engine-missing-wait": ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1",
                                 "cuco_ce_wait(c, DOWN_SLOTS + (p.rank + i) % p.world, c.epoch * (uint64_t)nch, "
                                 "stream);", "(void)i;"),
    # chunk-major STAGE: a partial tile's rows all land on its first row's place
    "host_nccl-chunk-major": ("host_nccl/stream_overlap/global_barrier/cta/4K/1",
                              "stage_off(p, x.d, x.lo + r)", "stage_off(p, x.d, x.lo)"),
    "up-dropped-tile": ("gin/sequential/global_barrier/cta/4K/2",  # the last U tile is never computed
                        "for (int64_t t = worker; t < total; t += workers) {\n    const int src",
                        "for (int64_t t = worker; t + 1 < total; t += workers) {\n    const int src"),
    "swiglu-gate-as-up": ("lsa/stream_overlap/per_peer_signal/cta/16K/2",  # silu(X w1) * (X w1)
                          "static_cast<const cuco_t*>(c.in[2]) + col0", "static_cast<const cuco_t*>(c.in[1]) + col0"),
    "no-activation": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1",
                      "ep.act = p.act == mlp::ACT_GELU_TANH ? CUCO_ACT_GELU_TANH : CUCO_ACT_SILU;", ""),
}


def _broken(name: str) -> str:
    key, old, new = MUTATIONS[name]
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    return mutate(intact, old, new) if new else edit_lines(intact, old)


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_synchronisation_or_indexing_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    intact = PATTERN.render(ds.DesignPoint.parse_key(MUTATIONS[name][0]))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    broken = emulate_only(_broken(name), spec, cases, shared_cache, tmp_path / "broken")
    assert broken.status in FAILED, broken.reason


def test_a_fused_kernel_that_skips_the_u_wait_fails_the_same_way_every_time(spec, cases, shared_cache, tmp_path):
    broken = _broken("lsa-fused-no-u-wait")
    outcomes = {(o.status, o.reason) for o in
                (emulate_only(broken, spec, cases, shared_cache, tmp_path / str(i)) for i in range(3))}
    assert len(outcomes) == 1 and next(iter(outcomes))[0] is ds.Status.WRONG_RESULT


def test_every_tile_goes_through_the_gemm_tile():
    for p in random.Random(3).sample(ds.valid_points(PATTERN, ds.get_profile("H100")), 40):
        src = PATTERN.render(p)
        assert src.count("cuco_gemm_tile<Cfg>(") == 3, p.key()  # X @ w1, X @ w3 (SwiGLU), U @ w2
        assert "__shared__ float" not in src and "+= As[" not in src, p.key()  # no scalar tile of its own


# Kernels that compute tiles (finish_kernel: the owner's own partial; the others only move data,
# reduce or wait). The fused placement also compiles phase 2's own one-phase fused kernel, unused.
GEMM_KERNELS = ("gemm_kernel", "finish_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert tiles, key
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        assert all(k.spill_stores <= 8 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])


def test_cost_matches_hand_computed_figures():
    # Llama-3-70B MLP at TP=8, prefill of 4096 tokens, SwiGLU, bf16: F/n = 3584.
    up = PATTERN.cost({"m": 4096, "h": 8192, "f": 28672, "act": 3}, 8, ds.DType.BF16)
    down = up.then
    assert up.phases == (up, down) and down.then is None
    assert up.flops == 2 * 2 * 4096 * 8192 * 3584 == 481_036_337_152  # X @ w1 and X @ w3
    assert up.hbm_bytes == (4096 * 8192 + 2 * 8192 * 3584 + 4096 * 3584) * 2 == 213_909_504
    assert (up.collective, up.comm_bytes) == ("allgather", 4096 * 8192 * 2)
    assert (up.out_rows, up.out_cols, up.local_fraction) == (4096, 3584, 1 / 8)
    assert down.flops == 2 * 4096 * 3584 * 8192 == 240_518_168_576
    assert down.hbm_bytes == (4096 * 3584 + 3584 * 8192 + 4096 * 8192) * 2 == 155_189_248
    assert (down.collective, down.comm_bytes) == ("reducescatter", 4096 * 8192 * 2)
    assert (down.out_rows, down.out_cols, down.local_fraction) == (4096, 8192, 1 / 8)
    gelu = PATTERN.cost({"m": 4096, "h": 8192, "f": 28672, "act": 1}, 8, ds.DType.BF16)
    assert gelu.flops == up.flops / 2 and gelu.hbm_bytes == (4096 * 8192 + 8192 * 3584 + 4096 * 3584) * 2
    assert gelu.then == down


def test_buffers_and_dims():
    dims = {"m": 64, "h": 40, "f": 24, "act": 3}
    assert PATTERN.symm_bytes(dims, 4, ds.DType.BF16) == 3 * 64 * 40 * 2  # GATHER, STAGE, RECV
    assert PATTERN.workspace_bytes(dims, 4, ds.DType.BF16) == 64 * 6 * 2  # U
    assert PATTERN.dim_problems(dims, 4) == []
    assert PATTERN.dim_problems({**dims, "m": 66}, 4) == ["m=66 is not divisible by world size 4"]
    assert PATTERN.dim_problems({**dims, "f": 26}, 4) == ["f=26 is not divisible by world size 4"]
    assert "not an activation" in PATTERN.dim_problems({**dims, "act": 4}, 4)[0]
    assert "missing" in PATTERN.dim_problems({"m": 64, "h": 40, "f": 24}, 4)[0]


def test_excluded_points_say_why():
    why = PATTERN.excluded(ds.DesignPoint.parse_key("host_nccl/sequential/global_barrier/cta/16K/1"))
    assert "chunk_bytes has no effect" in why
    multimem = ds.DesignPoint.parse_key("multimem/split_put_wait/global_barrier/cta/4K/2")
    assert "no early put" in PATTERN.excluded(multimem)
    assert PATTERN.excluded(ds.DesignPoint.parse_key("multimem/split_put_wait/per_tile_signal/cta/4K/2")) is None


DIMS = {"m": 8, "h": 6, "f": 10, "act": 3}


def _load_reference():
    module_spec = importlib.util.spec_from_file_location("tp_mlp_reference", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _reference_rank(rank: int, init: str, dims: dict, queue) -> None:
    import torch.distributed as dist
    reference = _load_reference()
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        inputs = reference.make_inputs(dims, rank, 2, torch.float32, torch.Generator().manual_seed(rank))
        out = reference.reference(inputs, dims, None)["y"]
        # numpy, not tensors: torch would share their storage with a process about to exit
        queue.put((rank, {k: v.numpy() for k, v in inputs.items()}, out.numpy()))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("act", [1, 2, 3])
def test_reference_at_world_2_matches_a_single_process_mlp(act, tmp_path):
    dims = {**DIMS, "act": act}
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_reference_rank, args=(r, f"file://{tmp_path / 'pg'}", dims, queue)) for r in (0, 1)]
    for p in procs:
        p.start()
    got = {}
    for _ in procs:
        r, inputs, out = queue.get(timeout=60)
        got[r] = ({k: torch.from_numpy(v) for k, v in inputs.items()}, torch.from_numpy(out))
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    ins = [got[r][0] for r in (0, 1)]
    x = torch.cat([i["x"] for i in ins])  # [M, H]: every rank's rows
    w1, w3 = (torch.cat([i[n] for i in ins], dim=1) for n in ("w1", "w3"))  # [H, F]: the column shards
    w2 = torch.cat([i["w2"] for i in ins])  # [F, H]: the row shards
    act_of = {1: lambda a, b: F.gelu(a, approximate="tanh"), 2: lambda a, b: F.silu(a), 3: lambda a, b: F.silu(a) * b}
    y = act_of[act](x @ w1, x @ w3) @ w2  # the unsharded MLP
    assert ins[0]["x"].shape == (4, 6) and ins[0]["w1"].shape == (6, 5) and ins[0]["w2"].shape == (5, 6)
    assert list(ins[0]) == list(PATTERN.inputs)
    assert not torch.equal(ins[0]["x"], ins[1]["x"])  # non-uniform across ranks
    for r in (0, 1):
        torch.testing.assert_close(got[r][1], y[4 * r:4 * (r + 1)], rtol=1e-5, atol=1e-5)

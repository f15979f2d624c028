"""The MoE dispatch + experts + combine family: a seeded sample of its valid points builds (nvcc,
nccl backend) and passes emulation at 2 and 4 ranks; a missing wait, a wrong peer offset, a dropped
chunk or a broken expert GEMM fails emulation, every time; the expert GEMMs build to tensor-core
MMA; cost() matches hand-computed figures; the gloo reference matches a single-process
computation. scripts/check_all_points.py checks every point."""

from pathlib import Path

import pytest
import torch

import design_space as ds
from design_space.families.moe_dispatch_combine import rank_loads
from evaluator import emulate
from tests.kernels.families.family_helpers import (sampled, gemm_kernels_per_backend, assert_sample_passes,
                                                    edit_lines)

PATTERN = ds.get_pattern("moe_dispatch_combine")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "moe_dispatch_combine"
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)




def _emulate(evaluator, cases, source: str, work: Path) -> emulate.EmulationOutcome:
    # The emulate stage alone: a mutant compiles with nvcc like its template (the sample checks
    # that), and skipping a fresh nvcc build per mutant keeps this file fast.
    return emulate.emulate(source, spec=evaluator.spec, pattern=PATTERN, cases=cases, work_dir=work,
                           cache_dir=evaluator.config.cache_dir / "emulator", settings=evaluator.config.emulation)


# (point, text to find, replacement or "" to drop the line): every backend with device-side sync
MUTATIONS = [
    ("lsa/split_put_wait/per_tile_signal/warp/4K/2", "cuco_wait(c, slot, at_least);", ""),  # missing wait
    ("lsa/stream_overlap/per_peer_signal/cta/16K/4",  # wrong peer offset: results land in another rank's block
     "comb_off(p, comb_block(p, p.rank), u)", "comb_off(p, comb_block(p, (p.rank + 1) % p.world), u)"),
    ("lsa/sequential/global_barrier/cta/4K/1", "barrier_kernel<<<1, 32, 0, stream>>>(c, 0);", ""),  # no barrier
    ("gin/stream_overlap/per_peer_signal/cta/4K/2", "cuco_gin_wait(", ""),  # missing wait
    ("gin/split_put_wait/per_tile_signal/thread/4K/1",  # a dropped chunk: chunk 0 of every pair never leaves
     "      send_dispatch(c, p, peer, q, r0, r1);", "      if (q != 0) send_dispatch(c, p, peer, q, r0, r1);"),
    ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1", "cuco_wait(c, slot, at_least);", ""),
    ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", "cuco_ce_wait(c, SLOT_DTILE", ""),
    ("copy_engine/stream_overlap/global_barrier/copy_engine/4K/1",  # a dropped chunk: its DMA copy never runs
     "    cuco_ce_put(c, peer, dst_off +", "    if (q != 0) cuco_ce_put(c, peer, dst_off +"),
    # the expert GEMMs: the second GEMM reads the intermediate before every thread has written it
    ("lsa/stream_overlap/per_tile_signal/cta/4K/2", "// the whole intermediate is written", ""),
    ("host_nccl/sequential/global_barrier/cta/4K/1", "silu.act = CUCO_ACT_SILU;", ""),  # no activation
    ("gin/fused_persistent/per_peer_signal/warp/16K/2",  # every tile multiplies by local expert 0's weights
     "static_cast<const cuco_t*>(c.in[3]) + x.le * p.F * p.H;", "static_cast<const cuco_t*>(c.in[3]);"),
]


@pytest.mark.parametrize("key, old, new", sampled(MUTATIONS, [f"{k.split('/')[0]}-{o.strip()[:24]}" for k, o, _ in MUTATIONS]))
def test_broken_synchronisation_or_indexing_fails_emulation(evaluator, cases, tmp_path, key, old, new):
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    assert _emulate(evaluator, cases, intact, tmp_path / "intact").status is ds.Status.OK
    outcome = _emulate(evaluator, cases, edit_lines(intact, old, new), tmp_path / "broken")
    assert outcome.status in FAILED, outcome.reason


def test_a_missing_wait_fails_the_same_way_every_time(evaluator, cases, tmp_path):
    broken = edit_lines(PATTERN.render(ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/4K/2")),
                     "cuco_wait(c, slot, at_least);")
    outcomes = [_emulate(evaluator, cases, broken, tmp_path / str(i)) for i in range(5)]
    assert {(o.status, o.reason) for o in outcomes} == {(outcomes[0].status, outcomes[0].reason)}
    assert outcomes[0].status is ds.Status.WRONG_RESULT


def test_expert_gemms_build_to_tensor_core_mma(shared_cache, tmp_path):
    names = ("expert_kernel", "fused_kernel")
    for key, kernels in gemm_kernels_per_backend(PATTERN, "sm_90", names, shared_cache, tmp_path):
        assert kernels, f"{key}: no expert kernel in the build"
        assert all(k.mma > 0 for k in kernels), f"{key}: {[(k.name, k.mma) for k in kernels]}"


def test_cost_matches_hand_computed_figures():
    # t=16 tokens, h=64, f=32, e=4 experts, top-1, Zipf exponent 1.0, 2 ranks, bf16. Popularity
    # order (e * 3) mod 4 gives weights 1, 1/4, 1/3, 1/2: rank 0 (experts 0, 1) gets 1.25 / (25/12)
    # = 0.6 of the rows, rank 1 0.4, so the busiest rank carries 1.2x the mean.
    cost = PATTERN.cost({"t": 16, "h": 64, "f": 32, "e": 4, "k": 1, "skew": 100}, 2, ds.DType.BF16)
    assert cost.flops == 2 * 16 * 1 * (2 * 64 * 32 + 64) == 133_120
    assert cost.hbm_bytes == 2 * (2 * 2 * 64 * 32 + 4 * 16 * 64 + 16 * 64) == 26_624
    assert cost.collective == "alltoall"
    assert cost.comm_bytes == 2 * 16 * 64 * 2 == 4_096
    assert (cost.out_rows, cost.out_cols, cost.local_fraction, cost.steps) == (16, 64, 0.5, 2)
    assert cost.imbalance == pytest.approx(1.2)


def test_the_spec_routing_is_skewed_across_ranks(spec):
    for shape in spec.shapes:
        loads = rank_loads(shape.dims, 8)
        assert max(loads) / (sum(loads) / 8) > 1.2, shape.name


def _dense(inputs: list[dict], dims: dict) -> list[torch.Tensor]:
    """Every rank's output computed in one process from all ranks' inputs and expert weights."""
    k, el = dims["k"], dims["e"] // len(inputs)
    outs = []
    for inp in inputs:
        x, route = inp["x"], inp["route"]
        out = torch.zeros_like(x)
        for t in range(x.shape[0]):
            for j in range(k):
                e = int(route[t, j].round())
                owner = inputs[e // el]
                y = torch.nn.functional.silu(x[t] @ owner["w1"][e % el]) @ owner["w2"][e % el]
                out[t] += route[t, k + j] * y
        outs.append(out)
    return outs


def _tensor(tf) -> torch.Tensor:
    return torch.from_numpy(emulate.as_float32(tf.path, tf.dtype, tf.shape).copy())


def test_the_gloo_reference_matches_a_single_process_computation(cases):
    checked = 0
    for case in (c for c in cases if c.world == 2):
        inputs = [{name: _tensor(tf) for name, tf in zip(PATTERN.inputs, rd.inputs)} for rd in case.ranks]
        ids = [inp["route"][:, :case.shape.dims["k"]].round().long() for inp in inputs]
        assert all(((i >= 0) & (i < case.shape.dims["e"])).all() for i in ids)
        for rank, (want, rd) in enumerate(zip(_dense(inputs, case.shape.dims), case.ranks)):
            got = _tensor(rd.outputs[0])
            torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2, msg=f"{case.shape.name} rank {rank}")
        checked += 1
    assert checked == 2 * emulate.EmulationSettings().iterations  # two emulation shapes, every seeded call

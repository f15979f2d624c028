"""The full MoE layer family (router + SwiGLU experts, expert parallel): a seeded sample of its valid
points builds (nvcc, nccl backend) and passes emulation at 2 and 4 ranks; a missing wait, a wrong
peer offset, a dropped chunk, a router barrier never signalled, a router that picks an expert
twice or weighs the choices evenly, and a SwiGLU without its up projection fail emulation, every
time; the router and expert GEMMs build to tensor-core MMA; cost() matches hand-computed
figures; the canonical inputs keep a routing margin; the gloo reference matches a single-process
computation. scripts/check_all_points.py checks every point."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

import design_space as ds
from evaluator import emulate
from tests.kernels.families.family_helpers import (sampled, gemm_kernels_per_backend, assert_sample_passes,
                                                    edit_lines, emulate_only)

PATTERN = ds.get_pattern("moe_router_swiglu")
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "moe_router_swiglu"
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# (point, text to find, replacement or "" to drop the line): every backend with device-side sync,
# the persistent kernel's router barrier, the router's choice and weights, the SwiGLU epilogue
MUTATIONS = [
    ("lsa/split_put_wait/per_tile_signal/warp/4K/2", "cuco_wait(c, slot, at_least);", ""),  # missing wait
    ("lsa/stream_overlap/per_peer_signal/cta/16K/4",  # wrong peer offset: results land in another rank's block
     "comb_off(p, comb_block(p, p.rank), u)", "comb_off(p, comb_block(p, (p.rank + 1) % p.world), u)"),
    ("gin/stream_overlap/per_peer_signal/cta/4K/2", "cuco_gin_wait(", ""),  # missing wait
    ("gin/split_put_wait/per_tile_signal/thread/4K/1",  # a dropped chunk: chunk 0 of every pair never leaves
     "      send_dispatch(c, p, peer, q, r0, r1);", "      if (q != 0) send_dispatch(c, p, peer, q, r0, r1);"),
    # the persistent kernel's router barrier: routed tiles never counted, so the layout waits forever.
    # (Dropping the wait itself goes unseen: the emulator runs the highest block first, so the
    # routing CTAs always finish before CTA 0 lays out; on a GPU they race.)
    ("gin/fused_persistent/per_peer_signal/warp/16K/2", "cuco_signal_add(c, p.rank, SLOT_ROUTED", ""),
    ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1", "cuco_wait(c, slot, at_least);", ""),
    ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", "cuco_ce_wait(c, SLOT_DTILE", ""),
    # the router: every choice is the top expert again; the chosen experts weighed evenly
    ("host_nccl/sequential/global_barrier/cta/4K/1", "continue;  // chosen already", ""),
    ("lsa/sequential/global_barrier/warp/4K/1", "expf(l[ids[t * p.K + j]] - peak) / sum", "1.f / p.K"),
    # the experts: silu(gate) without the up projection; the up tile reading the gate's columns
    ("lsa/stream_overlap/per_tile_signal/cta/4K/2", "* up.v[mi][ni][e]", "* 1.f"),
    ("copy_engine/stream_overlap/per_peer_signal/copy_engine/4K/1", "w13 + p.F + n0", "w13 + n0"),
]


@pytest.mark.parametrize("key, old, new", sampled(MUTATIONS, [f"{k.split('/')[0]}-{o.strip()[:24]}" for k, o, _ in MUTATIONS]))
def test_broken_synchronisation_routing_or_experts_fail_emulation(spec, cases, shared_cache, tmp_path, key, old, new):
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    outcome = emulate_only(edit_lines(intact, old, new), spec, cases, shared_cache, tmp_path / "broken")
    assert outcome.status in FAILED, outcome.reason


@pytest.mark.slow
def test_a_missing_wait_fails_the_same_way_every_time(spec, cases, shared_cache, tmp_path):
    broken = edit_lines(PATTERN.render(ds.DesignPoint.parse_key("gin/fused_persistent/per_tile_signal/cta/4K/2")),
                        "cuco_gin_wait(")
    outcomes = [emulate_only(broken, spec, cases, shared_cache, tmp_path / str(i)) for i in range(3)]
    assert {(o.status, o.reason) for o in outcomes} == {(outcomes[0].status, outcomes[0].reason)}
    assert outcomes[0].status is ds.Status.WRONG_RESULT


def test_router_and_expert_gemms_build_to_tensor_core_mma(shared_cache, tmp_path):
    names = ("router_kernel", "expert_kernel", "fused_kernel")
    for key, kernels in gemm_kernels_per_backend(PATTERN, "sm_90", names, shared_cache, tmp_path):
        found = {k.name for k in kernels}
        wanted = ("fused_kernel",) if "fused_persistent" in key else ("router_kernel", "expert_kernel")
        assert all(any(w in name for name in found) for w in wanted), f"{key}: {sorted(found)}"
        assert all(k.mma > 0 for k in kernels), f"{key}: {[(k.name, k.mma) for k in kernels]}"
        # the gate and up accumulators side by side still fit the registers
        assert all(k.spill_stores == 0 for k in kernels), f"{key}: {[(k.name, k.spill_stores) for k in kernels]}"


def test_the_base_family_renders_none_of_the_router_or_swiglu_code():
    base = ds.get_pattern("moe_dispatch_combine")
    for key in ("lsa/fused_persistent/per_tile_signal/cta/4K/2", "copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1"):
        src, ours = base.render(ds.DesignPoint.parse_key(key)), PATTERN.render(ds.DesignPoint.parse_key(key))
        assert "route_tiles" not in src and "swiglu_store" not in src and "c.in[1]" in src
        assert "route_tiles" in ours and "swiglu_store" in ours and "pattern: moe_router_swiglu" in ours


def test_cost_matches_hand_computed_figures():
    # t=16 tokens, h=64, f=32, e=4 experts (2 per rank), top-2, 2 ranks, bf16.
    cost = PATTERN.cost({"t": 16, "h": 64, "f": 32, "e": 4, "k": 2}, 2, ds.DType.BF16)
    router, experts = 2 * 16 * 64 * 4, 2 * 16 * 2 * (3 * 64 * 32 + 64)  # [T,H]x[H,E]; gate, up, down + weighted sum
    assert cost.flops == router + experts == 405_504
    router_bytes = 2 * (16 * 64 + 64 * 4) + 4 * 2 * 16 * 4 + 8 * 2 * 16 * 2  # x, wg; fp32 logits; ids, weights
    expert_bytes = 2 * (3 * 2 * 64 * 32 + 4 * 16 * 2 * 64 + 2 * 16 * 2 * 32 + 16 * 64)
    assert cost.hbm_bytes == router_bytes + expert_bytes == 50_688
    assert cost.collective == "alltoall"
    assert cost.comm_bytes == 2 * 16 * 2 * 64 * 2 == 8_192  # T*K rows of H each way
    assert (cost.out_rows, cost.out_cols, cost.local_fraction, cost.steps, cost.imbalance) == (32, 64, 0.5, 2, 1.0)


def test_dim_problems_name_what_does_not_fit():
    ok = {"t": 16, "h": 64, "f": 32, "e": 8, "k": 2}
    assert PATTERN.dim_problems(ok, 4) == []
    assert "spread evenly" in " ".join(PATTERN.dim_problems(ok, 3))
    assert "exceed" in " ".join(PATTERN.dim_problems({**ok, "k": 9}, 2))
    assert "cannot separate" in " ".join(PATTERN.dim_problems({**ok, "h": 4}, 2))
    assert "missing" in " ".join(PATTERN.dim_problems({"t": 16, "h": 64}, 2))


def _canonical():
    module_spec = importlib.util.spec_from_file_location("_moe_router_swiglu_reference", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_canonical_inputs_keep_a_routing_margin_and_one_router(dtype):
    ref = _canonical()
    for dims in ({"t": 80, "h": 128, "f": 48, "e": 8, "k": 2}, {"t": 19, "h": 22, "f": 24, "e": 16, "k": 8}):
        made = [ref.make_inputs(dims, r, 2, dtype, torch.Generator().manual_seed(7 + r)) for r in range(2)]
        assert torch.equal(made[0]["wg"], made[1]["wg"])  # replicated router weight
        assert not torch.equal(made[0]["x"], made[1]["x"])
        for inp in made:
            top = torch.sort(inp["x"].double() @ inp["wg"].double(), dim=1, descending=True).values
            gap = top[:, dims["k"] - 1] - top[:, dims["k"]]
            assert float(gap.min()) >= ref.MARGIN  # >> a logit's bf16 rounding (2^-7 below 4)


def test_the_reference_breaks_exact_ties_by_the_lower_expert_id():
    ref = _canonical()
    x = torch.tensor([[1.0, 0.0]])
    wg = torch.tensor([[0.5, 2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 0.0]])  # experts 1, 2, 3 tie
    ids, weights = ref.route(x, wg, 2)
    assert ids.tolist() == [[1, 2]]
    torch.testing.assert_close(weights, torch.tensor([[0.5, 0.5]]))


def _dense(inputs: list[dict], dims: dict) -> list[torch.Tensor]:
    """Every rank's output computed in one process: logits in float64, the k best by (-logit, id)."""
    k, f, el = dims["k"], dims["f"], dims["e"] // len(inputs)
    outs = []
    for inp in inputs:
        x, logits = inp["x"], inp["x"].double() @ inp["wg"].double()
        out = torch.zeros_like(x)
        for t in range(x.shape[0]):
            row = logits[t].tolist()
            chosen = sorted(range(len(row)), key=lambda e: (-row[e], e))[:k]
            scale = [math.exp(row[e] - row[chosen[0]]) for e in chosen]
            for e, s in zip(chosen, scale):
                owner = inputs[e // el]
                gate_up = x[t] @ owner["w13"][e % el]
                y = (torch.nn.functional.silu(gate_up[:f]) * gate_up[f:]) @ owner["w2"][e % el]
                out[t] += s / sum(scale) * y
        outs.append(out)
    return outs


def _tensor(tf) -> torch.Tensor:
    return torch.from_numpy(emulate.as_float32(tf.path, tf.dtype, tf.shape).copy())


def test_the_gloo_reference_matches_a_single_process_computation(cases):
    checked = 0
    for case in (c for c in cases if c.world == 2):
        inputs = [{name: _tensor(tf) for name, tf in zip(PATTERN.inputs, rd.inputs)} for rd in case.ranks]
        for rank, (want, rd) in enumerate(zip(_dense(inputs, case.shape.dims), case.ranks)):
            got = _tensor(rd.outputs[0])
            torch.testing.assert_close(got, want, atol=1e-2, rtol=1e-2, msg=f"{case.shape.name} rank {rank}")
        checked += 1
    assert checked == 2 * emulate.EmulationSettings().iterations  # two emulation shapes, every seeded call

"""The ring-attention family: a seeded sample of valid points builds (nvcc, nccl backend) and
passes emulation; a missing arrival or credit wait, a wrong peer offset, a dropped chunk or a
broken online softmax fails emulation, the same way every time; the attention kernels build to
tensor-core MMA; cost() and the gloo reference match hand computations."""

import importlib.util
import math
from pathlib import Path

import pytest
import torch

import design_space as ds
from evaluator import emulate, guard, reference
from tests.kernels.families.family_helpers import (sampled, gemm_kernels_per_backend, assert_sample_passes,
                                                    emulate_only, mutate)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ring_attention"
PATTERN = ds.get_pattern("ring_attention")


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)




_WAIT_ROWS = "++ch) sig_wait(c, data_slot(c, G, ch), data_target(c, p, G));"
# (point, text, replacement): every backend with device-side synchronisation loses the wait before
# the compute reads a chunk; an LSA store lands one row off; a send loop drops its last chunk; a GIN
# sender refills a double-buffered slot without waiting for the right neighbour's credits.
MUTATIONS = {
    "lsa-missing-wait": ("lsa/fused_persistent/per_tile_signal/cta/4K/2", _WAIT_ROWS, "++ch) {}"),
    "gin-missing-wait": ("gin/stream_overlap/per_tile_signal/warp/4K/2", _WAIT_ROWS, "++ch) {}"),
    "copy_engine-missing-wait": ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1", _WAIT_ROWS,
                                 "++ch) {}"),
    "lsa-wrong-peer-offset": ("lsa/stream_overlap/per_peer_signal/thread/4K/1",
                              "dst = slot_offset(p, slot_of(c, G)) + g0 * row_bytes;",
                              "dst = slot_offset(p, slot_of(c, G)) + (g0 + 1) * row_bytes;"),
    "lsa-dropped-chunk": ("lsa/split_put_wait/global_barrier/cta/4K/2",
                          "for (int64_t ch = cta; ch < num_chunks(p); ch += ncta)",
                          "for (int64_t ch = cta; ch < num_chunks(p) - 1; ch += ncta)"),
    "gin-missing-credit-wait": ("gin/fused_persistent/per_tile_signal/warp/4K/2",
                                "      wait_slot_free(c, p, G);\n", ""),
    # the online softmax: O is not rescaled when a row's maximum grows; each warp column takes its
    # own row maximum; a causal query sees the key after it
    "missing-rescale": ("lsa/stream_overlap/per_peer_signal/warp/4K/2",
                        "for (int e = 0; e < 4; ++e) o.v[mi][ni][e] *= alpha[mi][e / 2];",
                        "for (int e = 0; e < 4; ++e) (void)alpha;"),
    "row-max-of-one-warp": ("host_nccl/sequential/global_barrier/cta/4K/1",
                            "for (int w = 0; w < CfgS::WARPS_N; ++w) mt = fmaxf(mt, red[w * BQ + r]);",
                            "mt = fmaxf(mt, red[wn * BQ + r]);"),
    "causal_mask_off_by_one": ("copy_engine/split_put_wait/per_tile_signal/copy_engine/4K/1",
                               "col <= r + shift ?", "col <= r + shift + 1 ?"),
}
FAILED = {ds.Status.WRONG_RESULT, ds.Status.TIMEOUT}


@pytest.mark.parametrize("name", sampled(sorted(MUTATIONS)))
def test_broken_transfer_fails_emulation(name, spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS[name]
    intact = PATTERN.render(ds.DesignPoint.parse_key(key))
    assert emulate_only(intact, spec, cases, shared_cache, tmp_path / "intact").status is ds.Status.OK
    broken = emulate_only(mutate(intact, old, new), spec, cases, shared_cache, tmp_path / "broken")
    assert broken.status in FAILED, broken.reason


def test_a_missing_wait_fails_the_same_way_every_time(spec, cases, shared_cache, tmp_path):
    key, old, new = MUTATIONS["lsa-missing-wait"]
    broken = mutate(PATTERN.render(ds.DesignPoint.parse_key(key)), old, new)
    outcomes = {(o.status, o.reason) for o in
                (emulate_only(broken, spec, cases, shared_cache, tmp_path / str(i)) for i in range(5))}
    assert len(outcomes) == 1
    assert next(iter(outcomes))[0] is ds.Status.WRONG_RESULT


def test_attention_builds_to_tensor_core_mma(shared_cache, tmp_path):
    names = ("attend", "fused_kernel")
    for key, kernels in gemm_kernels_per_backend(PATTERN, "sm_90", names, shared_cache, tmp_path):
        assert kernels, f"{key}: no attention kernel in the build"
        assert all(k.mma > 0 for k in kernels), f"{key}: {[(k.name, k.mma) for k in kernels]}"


def test_cost_matches_hand_computation():
    # H=8, S=4096, D=128, causal, 4 ranks, bf16: Sl=1024; rank r scores r*1024^2 + 1024*1025/2 pairs
    c = PATTERN.cost({"h": 8, "s": 4096, "d": 128, "mask": 2}, 4, ds.DType.BF16)
    mean_pairs = 1.5 * 1024**2 + 524_800  # = 2_097_664
    assert c.flops == 4 * 8 * 128 * mean_pairs == 8_592_031_744
    block = 2 * 8 * 1024 * 128 * 2  # one K/V block: 4 MiB
    assert c.comm_bytes == 3 * block == 12_582_912
    assert c.hbm_bytes == 2 * 8 * 1024 * 128 * 2 + 2.5 * block  # Q and O, (n + 1) / 2 blocks on average
    assert math.isclose(c.imbalance, (3 * 1024**2 + 524_800) / mean_pairs)
    assert math.isclose(c.local_fraction, 524_800 / mean_pairs)
    assert (c.collective, c.steps, c.out_rows, c.out_cols) == ("p2p", 3, 8 * 1024, 128)
    full = PATTERN.cost({"h": 8, "s": 4096, "d": 128, "mask": 1}, 4, ds.DType.BF16)
    assert full.flops == 4 * 8 * 1024 * 4096 * 128 and full.imbalance == 1.0 and full.local_fraction == 0.25


def test_dims_that_do_not_fit_are_reported():
    assert PATTERN.dim_problems({"h": 2, "s": 10, "d": 8, "mask": 1}, 4)
    assert PATTERN.dim_problems({"h": 2, "s": 8, "d": 256, "mask": 1}, 2)
    assert PATTERN.dim_problems({"h": 2, "s": 8, "d": 8, "mask": 0}, 2)
    assert PATTERN.dim_problems({"h": 2, "s": 8, "d": 8}, 2)
    assert PATTERN.dim_problems({"h": 2, "s": 8, "d": 8, "mask": 2}, 4) == []


def _load_reference_module():
    module_spec = importlib.util.spec_from_file_location("ring_reference_under_test", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _tensor(tf) -> torch.Tensor:
    return torch.from_numpy(emulate.as_float32(tf.path, tf.dtype, tf.shape).copy())


def test_gloo_reference_matches_single_process(spec, shared_cache):
    shapes = tuple(ds.ShapeCase(name=f"ref-check-{mask}", dims={"h": 2, "s": 10, "d": 6, "mask": mask})
                   for mask in (1, 2))
    for case in reference.prepare(spec, PATTERN, shared_cache / "reference", worlds=(2,), cases=shapes):
        # The whole sequence in one process: the ranks' shards concatenated along it.
        q, k, v = (torch.cat([_tensor(r.inputs[i]) for r in case.ranks], dim=1) for i in range(3))
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), is_causal=case.shape.dims["mask"] == 2)
        got = torch.cat([_tensor(r.outputs[0]) for r in case.ranks], dim=1)
        torch.testing.assert_close(got, expected.to(torch.bfloat16).float(), atol=2e-2, rtol=2e-2)
        assert case.ranks[0].inputs[2].path.read_bytes() != case.ranks[1].inputs[2].path.read_bytes()


def test_make_inputs_follows_the_pattern_order():
    module = _load_reference_module()
    dims = {"h": 2, "s": 8, "d": 4, "mask": 2}
    inputs = module.make_inputs(dims, 1, 2, torch.bfloat16, torch.Generator().manual_seed(0))
    assert list(inputs) == list(PATTERN.inputs)
    assert all(t.shape == (2, 4, 4) and t.dtype is torch.bfloat16 for t in inputs.values())
    assert inputs["v"].float().std() > 0.5  # random, not uniform


def test_valid_points_render_their_key_and_pass_the_guard():
    # One point per (backend, placement, sync scope, issuer): the guard takes ~40 ms a source, and
    # scripts/check_all_points.py sees every point.
    chosen = {}
    for hw in ("H100", "A100"):
        for p in ds.valid_points(PATTERN, ds.get_profile(hw)):
            chosen.setdefault((p.backend, p.placement, p.sync_scope, p.issuer), p)
    for point in chosen.values():
        src = PATTERN.render(point)
        assert src.startswith(f"// cuco candidate -- pattern: ring_attention\n// design point: {point.key()}\n")
        assert guard.check(src, point=point) == [], point.key()


def test_points_outside_the_family_are_refused_with_a_fix():
    with pytest.raises(ds.DesignPointError, match="multimem"):
        PATTERN.render(ds.DesignPoint.parse_key("multimem/fused_persistent/per_tile_signal/warp/4K/2"))
    with pytest.raises(ds.DesignPointError, match="all-gather"):
        PATTERN.render(ds.DesignPoint.parse_key("host_nccl/sequential/global_barrier/cta/64K/1"))

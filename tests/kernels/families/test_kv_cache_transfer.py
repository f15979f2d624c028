"""The KV-cache transfer family: a seeded sample of valid points builds (nvcc, nccl backend) and
passes emulation; broken synchronisation, offsets, chunk loops and a dropped GEMM tile fail
emulation, every time; every kernel that computes KV tiles runs on tensor cores; cost() and the
gloo reference match hand computations."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import design_space as ds
from evaluator import emulate
from tests.kernels.families.family_helpers import (sampled, gemm_kernels_per_backend, assert_sample_passes,
                                                    emulate_only, mutate)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "kv_cache_transfer"
PATTERN = ds.get_pattern("kv_cache_transfer")


def test_seeded_sample_of_the_family_builds_and_emulates(spec, shared_cache):
    assert_sample_passes(spec, shared_cache)


# Kernels that compute KV tiles (the others only move data or wait).
GEMM_KERNELS = ("gemm_kernel", "fused_kernel")


@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow)])  # sm_80: the slow set
def test_kernels_that_compute_kv_tiles_use_tensor_cores(arch, shared_cache, tmp_path):
    for key, tiles in gemm_kernels_per_backend(PATTERN, arch, GEMM_KERNELS, shared_cache, tmp_path):
        assert len(tiles) == 2, (key, [k.name for k in tiles])  # short and tall tiles
        assert all(k.mma for k in tiles), (key, [(k.name, k.mma) for k in tiles])
        assert all(k.spill_stores == 0 for k in tiles), (key, [(k.name, k.spill_stores) for k in tiles])


# (point, text, replacement): every backend with device-side synchronisation loses a wait; an
# LSA store lands one layer off; a chunk loop drops its last chunk; the GEMM drops its last tile.
MUTATIONS = {
    "lsa-missing-wait": ("lsa/fused_persistent/per_tile_signal/cta/4K/2",
                         "  cuco_wait(c, ARRIVE_SLOT + (int)ch, c.epoch);\n", ""),
    "gin-missing-wait": ("gin/stream_overlap/per_tile_signal/warp/4K/2",
                         "  cuco_gin_wait(c, ARRIVE_SLOT + (int)ch, c.epoch);\n", ""),
    "copy_engine-missing-wait": ("copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1",
                                 "if (cudaError_t e = cuco_ce_wait(c, ARRIVE_SLOT + (int)ch, c.epoch, s))",
                                 "if (cudaError_t e = cudaSuccess)"),
    "lsa-wrong-peer-offset": ("lsa/stream_overlap/per_tile_signal/thread/4K/1",
                              "cuco_put_thread(c, p.partner, q.off,",
                              "cuco_put_thread(c, p.partner, (q.off + kv_offset(p, 1, 0)) % kv_offset(p, p.L, 0),"),
    "lsa-dropped-chunk": ("lsa/split_put_wait/global_barrier/cta/16K/2",
                          "for (int64_t ch = ch0 + cta; ch < ch1; ch += ncta)",
                          "for (int64_t ch = ch0 + cta; ch < ch1 - 1; ch += ncta)"),
    "gemm-dropped-tile": ("gin/sequential/global_barrier/warp/4K/2",
                          "for (int64_t i = t0 + worker; i < t1; i += workers)",
                          "for (int64_t i = t0 + worker; i + 1 < t1; i += workers)"),
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


def test_cost_matches_hand_computation():
    # Llama-3-8B prefill of 4096 tokens: L=32, T=4096, H=4096, 2*Dkv=2048, bf16
    c = PATTERN.cost({"l": 32, "t": 4096, "h": 4096, "dkv": 1024}, 8, ds.DType.BF16)
    assert c.flops == 2 * 32 * 4096 * 4096 * 2048 == 2**41
    assert c.hbm_bytes == (32 * 4096 * 4096 + 2 * 32 * 4096 * 2048) * 2 == 2**31
    assert c.comm_bytes == 32 * 4096 * 2048 * 2 == 2**29
    assert (c.collective, c.out_rows, c.out_cols, c.local_fraction) == ("p2p", 32 * 4096, 2048, 0.0)


def test_dims_that_do_not_fit_are_reported():
    assert PATTERN.dim_problems({"l": 2, "t": 8, "h": 8, "dkv": 8}, 3)
    assert PATTERN.dim_problems({"l": 2000, "t": 8, "h": 8, "dkv": 8}, 2)
    assert PATTERN.dim_problems({"l": 2, "t": 8, "h": 8}, 2)
    assert PATTERN.dim_problems({"l": 2, "t": 8, "h": 8, "dkv": 8}, 4) == []


def _load_reference_module():
    module_spec = importlib.util.spec_from_file_location("kv_reference_under_test", EXAMPLE / "reference.py")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _tensor(tf) -> torch.Tensor:
    return torch.from_numpy(emulate.as_float32(tf.path, tf.dtype, tf.shape).copy())


def test_gloo_reference_matches_single_process(cases):
    # the world-2 ragged emulation case: the gloo run the emulation stage compares against
    case = next(c for c in cases if c.world == 2 and c.shape.name == "emu-ragged")
    prefill, decode = case.ranks
    x, w = (_tensor(tf) for tf in prefill.inputs)
    expected = torch.einsum("lth,lhd->ltd", x.double(), w.double()).to(torch.bfloat16).float()
    kv = _tensor(prefill.outputs[0])
    assert kv.shape == (2, 45, 80)
    torch.testing.assert_close(kv, expected, atol=2e-2, rtol=2e-2)
    assert np.array_equal(_tensor(decode.outputs[0]).numpy(), kv.numpy())  # the decode rank holds the same cache
    x1, _ = (_tensor(tf) for tf in decode.inputs)
    assert not torch.equal(x1, x) and x.std() > 0.5  # dummies differ from the prefill's; inputs are not uniform


def test_make_inputs_follows_the_pattern_order():
    module = _load_reference_module()
    gen = torch.Generator().manual_seed(0)
    inputs = module.make_inputs({"l": 2, "t": 3, "h": 4, "dkv": 5}, 1, 2, torch.bfloat16, gen)
    assert list(inputs) == list(PATTERN.inputs)
    assert inputs["x"].shape == (2, 3, 4) and inputs["w"].shape == (2, 4, 10)
    assert all(t.dtype is torch.bfloat16 for t in inputs.values())

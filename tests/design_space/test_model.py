"""The analytic model against the worked examples of REFERENCE section 3."""

import pytest

import design_space as ds
from design_space.model import comm_factor, t_comm_ideal, t_comp

H100 = ds.get_profile("H100")
AG = ds.get_pattern("allgather_gemm")


def test_prefill_allgather_gemm_on_h100_matches_the_worked_example():
    cost = AG.cost({"m": 4096, "n": 49152, "k": 12288}, 8, ds.DType.BF16)
    assert t_comp(cost, H100, "bf16") == pytest.approx(625e-6, rel=0.01)
    assert t_comm_ideal(cost, 8, H100) == pytest.approx(196e-6, rel=0.01)
    point = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/warp/256K/8")
    est = ds.estimate(cost, point, 8, H100, "bf16")
    assert est.bound == pytest.approx(625e-6, rel=0.01)
    assert est.best_gain == pytest.approx(1.31, abs=0.01)


def test_decode_allgather_gemm_is_hbm_bound():
    cost = AG.cost({"m": 128, "n": 28672, "k": 8192}, 8, ds.DType.BF16)
    assert t_comp(cost, H100, "bf16") == pytest.approx(18e-6, rel=0.08)
    assert t_comm_ideal(cost, 8, H100) == pytest.approx(4e-6, rel=0.05)


def test_collective_factors_follow_the_ring_formulas():
    assert comm_factor("allgather", 8) == pytest.approx(7 / 8)
    assert comm_factor("allreduce", 4) == pytest.approx(1.5)
    assert comm_factor("allgather", 1) == 0


@pytest.mark.parametrize("key", [p.key() for p in ds.valid_points(AG, H100)][::37])
def test_no_simulated_time_beats_the_bound(key):
    point = ds.DesignPoint.parse_key(key)
    for dims in ({"m": 128, "n": 28672, "k": 8192}, {"m": 4096, "n": 49152, "k": 12288}):
        est = ds.estimate(AG.cost(dims, 8, ds.DType.BF16), point, 8, H100, "bf16")
        assert est.simulated >= est.bound


def _sim(key, dims=None):
    dims = dims or {"m": 4096, "n": 49152, "k": 12288}
    return ds.estimate(AG.cost(dims, 8, ds.DType.BF16), ds.DesignPoint.parse_key(key), 8, H100, "bf16").simulated


def test_overlap_beats_sequential_and_respects_the_two_x_limit():
    seq = _sim("lsa/sequential/global_barrier/cta/256K/16")
    fused = _sim("lsa/fused_persistent/per_tile_signal/cta/256K/16")
    assert fused < seq
    assert seq / fused <= 2.0


def test_model_reacts_to_chunking_and_comm_sms():
    # tiny chunks pay per-chunk launches; huge chunks stop pipelining
    assert _sim("lsa/stream_overlap/per_tile_signal/cta/4K/8") > _sim("lsa/stream_overlap/per_tile_signal/cta/1024K/8")
    # one comm CTA cannot feed NVLink; 32 CTAs cost compute SMs
    one, eight = _sim("lsa/fused_persistent/per_tile_signal/cta/256K/1"), _sim("lsa/fused_persistent/per_tile_signal/cta/256K/8")
    assert one > eight
    assert _sim("lsa/fused_persistent/per_tile_signal/cta/256K/32") > eight


def test_baseline_is_serial_gemm_plus_nccl():
    cost = AG.cost({"m": 4096, "n": 49152, "k": 12288}, 8, ds.DType.BF16)
    est = ds.estimate(cost, ds.DesignPoint.parse_key("lsa/sequential/global_barrier/cta/256K/16"), 8, H100, "bf16")
    assert est.baseline > est.t_comp + est.t_comm

"""The analytic model against the worked examples and the collective formulas of docs/model.md."""

import dataclasses
import functools
import importlib.util
import math
from pathlib import Path

import pytest

import design_space as ds
from design_space.code_features import CUBLAS_EFFICIENCY, SCALAR_TYPICAL, TENSOR_CORE_TYPICAL
from design_space.collectives import (
    CE_ENGINES, CE_SETUP_S, MULTIMEM_EFFICIENCY, SIGNAL_COST_S, comm_factor, device_time, ideal_time, multimem_factor,
    nccl_choice, nccl_time,
)
from design_space.model import ShapeModel, WorkloadCost, baseline_time, simulate, t_comm_ideal, t_comp

H100 = ds.get_profile("H100")
AG = ds.get_pattern("allgather_gemm")
PREFILL = {"m": 4096, "n": 49152, "k": 12288}
DECODE = {"m": 128, "n": 28672, "k": 8192}
FUSED = "lsa/fused_persistent/per_tile_signal/warp/256K/8"


def _cost(dims=PREFILL, world=8):
    return AG.cost(dims, world, ds.DType.BF16)


def _sim(key, dims=PREFILL, hw=H100, world=8, features=TENSOR_CORE_TYPICAL):
    return ds.estimate(_cost(dims, world), ds.DesignPoint.parse_key(key), world, hw, "bf16", features).simulated


def _bandwidth_term(cost, n, hw):
    return comm_factor(cost.collective, n) * cost.comm_bytes / hw.link_bytes_per_s


def test_prefill_allgather_gemm_on_h100_matches_the_worked_example():
    cost = _cost()
    assert t_comp(cost, H100, "bf16") == pytest.approx(625e-6, rel=0.01)
    assert _bandwidth_term(cost, 8, H100) == pytest.approx(196e-6, rel=0.01)
    assert t_comm_ideal(cost, 8, H100) == pytest.approx(196e-6, rel=0.01)  # + one NVLink alpha
    est = ds.estimate(cost, ds.DesignPoint.parse_key(FUSED), 8, H100, "bf16", TENSOR_CORE_TYPICAL)
    assert est.bound == pytest.approx(625e-6, rel=0.01)
    assert est.best_gain == pytest.approx(1.31, abs=0.01)
    # with practice efficiencies every time grows: cuBLAS at 80% of peak, NCCL at the link's 82%
    assert est.baseline_comp == pytest.approx(625e-6 / CUBLAS_EFFICIENCY, rel=0.01)
    ring = 7 / 8 * cost.comm_bytes / (450e9 * 0.82) + 7 * H100.link_alpha_s  # bytes at 82% of the link, 7 hops
    assert est.baseline_comm == pytest.approx(ring, rel=0.001)
    assert est.simulated > est.baseline_comp > est.bound


def test_decode_allgather_gemm_is_hbm_bound():
    cost = _cost(DECODE)
    assert cost.flops / H100.peak_flops["bf16"] < cost.hbm_bytes / H100.hbm_bytes_per_s
    assert t_comp(cost, H100, "bf16") == pytest.approx(18e-6, rel=0.08)
    assert _bandwidth_term(cost, 8, H100) == pytest.approx(4e-6, rel=0.05)
    # a one-shot design pays one hop of latency on top: ~4 us of bytes + 1.5 us
    assert t_comm_ideal(cost, 8, H100) == pytest.approx(_bandwidth_term(cost, 8, H100) + H100.link_alpha_s)


def test_collective_factors_follow_the_ring_formulas():
    assert comm_factor("allgather", 8) == pytest.approx(7 / 8)
    assert comm_factor("reducescatter", 8) == pytest.approx(7 / 8)
    assert comm_factor("allreduce", 4) == pytest.approx(1.5)
    assert comm_factor("alltoall", 4) == pytest.approx(0.75)
    assert comm_factor("p2p", 4) == 1.0
    assert comm_factor("allgather", 1) == 0


def test_multimem_cuts_allreduce_bytes_only_where_the_switch_allows():
    assert multimem_factor("allreduce", 8) == pytest.approx(9 / 8)
    assert multimem_factor("allreduce", 2) == pytest.approx(1.0)  # two-shot is already cheaper at n=2
    assert multimem_factor("allgather", 8) == comm_factor("allgather", 8)
    s = 64e6
    h100 = ideal_time("allreduce", s, 1, 8, H100) - H100.link_alpha_s
    assert h100 == pytest.approx(9 / 8 * s / H100.link_bytes_per_s)
    a100 = ds.get_profile("A100")  # no NVLink SHARP: two-shot
    assert ideal_time("allreduce", s, 1, 8, a100) - a100.link_alpha_s == pytest.approx(14 / 8 * s / 300e9)
    pcie = ds.get_profile("H100-PCIe")  # Hopper without a switch: no multimem either
    assert ideal_time("allreduce", s, 1, 4, pcie) == pytest.approx(1.5 * s / 50e9 + pcie.link_alpha_s)


def test_nccl_latency_follows_the_algorithm_it_picks():
    tiny, a100 = 1024.0, ds.get_profile("A100")
    # no NVLink SHARP on A100: rings, n-1 hops (twice for AllReduce)
    assert nccl_time("allgather", tiny, 1, 8, a100) == pytest.approx(7 * a100.link_alpha_s, rel=0.01)
    assert nccl_time("allreduce", tiny, 1, 8, a100) == pytest.approx(14 * a100.link_alpha_s, rel=0.01)
    # H100 + NVSwitch: NVLS, one hop per round, wins small messages; rings win large AllGathers
    assert nccl_choice("allgather", tiny, 1, 8, H100) == "nvls"
    assert nccl_time("allgather", tiny, 1, 8, H100) == pytest.approx(H100.link_alpha_s, rel=0.01)
    assert nccl_time("allreduce", tiny, 1, 8, H100) == pytest.approx(2 * H100.link_alpha_s, rel=0.01)
    assert nccl_choice("allgather", 1e9, 1, 8, H100) == "ring"
    assert nccl_choice("allreduce", 1e9, 1, 8, H100) == "nvls"  # (n+1)/n bytes beat 2(n-1)/n
    big = 1e9
    assert nccl_time("allreduce", big, 1, 8, H100) == pytest.approx(
        9 / 8 * big / (450e9 * MULTIMEM_EFFICIENCY) + 2 * H100.link_alpha_s)
    assert ideal_time("allgather", tiny, 1, 8, H100) == pytest.approx(H100.link_alpha_s, rel=0.01)


def test_device_and_nccl_pay_the_same_per_byte_and_per_hop():
    a100, s = ds.get_profile("A100"), 4e9
    lsa = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/4096K/32")
    dev = device_time("allgather", s, 1, 8, a100, lsa)
    signals = math.ceil(dev.chunks / 32) * SIGNAL_COST_S
    ring = nccl_time("allgather", s, 1, 8, a100)
    # one link efficiency for everyone: the same bytes take the same time; the ring pays 7 hops, a put + signal one
    assert dev.seconds - signals - a100.link_alpha_s == pytest.approx(ring - 7 * a100.link_alpha_s)
    ce = ds.DesignPoint.parse_key("copy_engine/stream_overlap/per_tile_signal/copy_engine/4096K/1")
    ce_time = device_time("allgather", s, 1, 8, a100, ce)
    setup = ce_time.chunks * CE_SETUP_S / CE_ENGINES
    assert ce_time.seconds - setup == pytest.approx(dev.seconds - signals)  # DMA at the same link efficiency
    # an AllReduce has two rounds (reduce, broadcast) for a device protocol too
    tiny = device_time("allreduce", 1024.0, 1, 8, a100, lsa)
    assert tiny.seconds == pytest.approx(2 * a100.link_alpha_s + SIGNAL_COST_S, rel=0.01)


def test_alltoall_and_p2p_use_the_bytes_each_rank_sends():
    s = 80e6
    assert ideal_time("alltoall", s, 1, 8, H100) == pytest.approx(7 / 8 * s / 450e9 + H100.link_alpha_s)
    assert ideal_time("p2p", s, 1, 8, H100) == pytest.approx(s / 450e9 + H100.link_alpha_s)
    mesh = ds.get_profile("A100-mesh")  # one peer gets a third of a 4-GPU mesh's links
    assert ideal_time("p2p", s, 1, 4, mesh) == pytest.approx(s / 100e9 + mesh.link_alpha_s)
    assert ideal_time("alltoall", s, 1, 4, mesh) == pytest.approx(3 / 4 * s / 300e9 + mesh.link_alpha_s)


def test_multi_node_allgather_is_bounded_by_the_cross_node_share_over_the_nics():
    hw = ds.get_profile("H100:2x8:ib400")
    s = 100e6
    # node-aware: (g-1)/g S over NVLink, (n-g)/(n g) S per NIC, concurrently, + one network alpha
    nvlink, nic = 7 / 8 * s / 450e9, 8 / (16 * 8) * s / 50e9
    assert ideal_time("allgather", s, 1, 16, hw) == pytest.approx(max(nvlink, nic) + hw.network.alpha_s)
    # NCCL's rings push (n-1)/(n g) S through each NIC at practice efficiency: slower than the bound
    assert nccl_time("allgather", s, 1, 16, hw) > ideal_time("allgather", s, 1, 16, hw)
    # a p2p that crosses nodes goes at NIC speed
    assert ideal_time("p2p", s, 1, 16, hw) == pytest.approx(s / 50e9 + hw.network.alpha_s)


def test_more_nodes_and_slower_networks_cost_more():
    s = 200e6
    one = ideal_time("allreduce", s, 1, 8, ds.get_profile("H100"))
    ib400 = ideal_time("allreduce", s, 1, 16, ds.get_profile("H100:2x8:ib400"))
    ib200 = ideal_time("allreduce", s, 1, 16, ds.get_profile("H100:2x8:ib200"))
    assert one < ib400 < ib200
    roce = nccl_time("allgather", 1024.0, 1, 16, ds.get_profile("H100:2x8:roce400"))
    assert roce > nccl_time("allgather", 1024.0, 1, 16, ds.get_profile("H100:2x8:ib400"))


def test_gin_inside_a_node_runs_at_nic_speed_and_across_nodes_works():
    point = ds.DesignPoint.parse_key("gin/fused_persistent/per_tile_signal/thread/256K/8")
    s = _cost().comm_bytes
    one_node = device_time("allgather", s, 1, 8, H100, point).seconds
    assert one_node > 7 / 8 * s / H100.nic_bytes_per_s()  # the NIC, not NVLink, moves the bytes
    two_nodes = ds.get_profile("H100:2x8:ib400")
    assert device_time("allgather", s, 1, 16, two_nodes, point).seconds >= ideal_time("allgather", s, 1, 16, two_nodes)


def test_copy_engine_uses_no_sms_but_pays_per_chunk_launches():
    coarse = "copy_engine/stream_overlap/per_tile_signal/copy_engine/1024K/1"
    fine = "copy_engine/stream_overlap/per_tile_signal/copy_engine/4K/1"
    assert _sim(fine) > 2 * _sim(coarse)
    s = _cost().comm_bytes
    ce = device_time("allgather", s, 1, 8, H100, ds.DesignPoint.parse_key(coarse))
    lsa = device_time("allgather", s, 1, 8, H100, ds.DesignPoint.parse_key(FUSED.replace("/8", "/16")))
    assert ce.sm_busy == 0 and ce.seconds > lsa.seconds  # per-copy setup and launches, same link efficiency


def test_imbalance_scales_the_busiest_rank_and_steps_add_latency():
    base = WorkloadCost(flops=1e12, hbm_bytes=1e9, collective="p2p", comm_bytes=1e8, out_rows=4096,
                        out_cols=4096, local_fraction=0.0)
    skew = WorkloadCost(**{**base.__dict__, "imbalance": 1.5})
    assert t_comp(skew, H100, "bf16") == pytest.approx(1.5 * t_comp(base, H100, "bf16"))
    bw = lambda c: t_comm_ideal(c, 8, H100) - c.steps * H100.link_alpha_s  # noqa: E731
    assert bw(skew) == pytest.approx(1.5 * bw(base))
    ring = WorkloadCost(**{**base.__dict__, "steps": 7})
    assert t_comm_ideal(ring, 8, H100) - t_comm_ideal(base, 8, H100) == pytest.approx(6 * H100.link_alpha_s)


@pytest.mark.parametrize("bad", [{"collective": "broadcast"}, {"local_fraction": 1.5}, {"imbalance": 0.5},
                                 {"steps": 0}])
def test_invalid_workload_costs_are_refused_with_a_fix(bad):
    fields = dict(flops=1.0, hbm_bytes=1.0, collective="allgather", comm_bytes=1.0, out_rows=1, out_cols=1,
                  local_fraction=0.5)
    with pytest.raises(ds.SpecError) as info:
        WorkloadCost(**{**fields, **bad})
    assert info.value.fix


def test_unknown_dtype_names_the_profile():
    with pytest.raises(ds.SpecError, match="H100"):
        t_comp(_cost(), H100, "fp8")


def test_overlap_beats_sequential_and_respects_the_two_x_limit():
    seq = _sim("lsa/sequential/global_barrier/cta/256K/16")
    fused = _sim("lsa/fused_persistent/per_tile_signal/cta/256K/16")
    assert fused < seq
    assert seq / fused <= 2.0


def test_model_reacts_to_chunking_and_comm_sms():
    # tiny chunks pay per-chunk launches; huge chunks stop pipelining
    assert _sim("lsa/stream_overlap/per_tile_signal/cta/4K/8") > _sim("lsa/stream_overlap/per_tile_signal/cta/1024K/8")
    # one comm CTA cannot feed NVLink; 32 CTAs cost compute SMs
    one, eight = _sim("lsa/fused_persistent/per_tile_signal/cta/256K/1"), _sim(FUSED.replace("warp", "cta"))
    assert one > eight
    assert _sim("lsa/fused_persistent/per_tile_signal/cta/256K/32") > eight
    # thread issuers move bytes slower than warps at the same CTA count
    thread, warp = "lsa/fused_persistent/per_tile_signal/thread/256K/4", "lsa/fused_persistent/per_tile_signal/warp/256K/4"
    assert _sim(thread) > _sim(warp)


def test_baseline_is_serial_cublas_plus_nccl():
    cost = _cost()
    est = ds.estimate(cost, ds.DesignPoint.parse_key("lsa/sequential/global_barrier/cta/256K/16"), 8, H100, "bf16")
    assert est.baseline == pytest.approx(est.baseline_comp + est.baseline_comm + 2 * H100.launch_s)
    assert est.baseline > est.t_comp + est.t_comm
    host = ds.DesignPoint.parse_key("host_nccl/sequential/global_barrier/cta/256K/1")
    # the host_nccl/sequential candidate has the baseline's schedule with its own GEMM: the same at cuBLAS speed
    assert simulate(cost, host, 8, H100, "bf16", TENSOR_CORE_TYPICAL) > est.baseline
    assert simulate(cost, host, 8, H100, "bf16", SCALAR_TYPICAL) > 10 * est.baseline


def test_a_barrier_synchronised_design_pays_its_barrier_on_top_of_the_put_hop():
    key = "lsa/sequential/global_barrier/cta/256K/16"
    cost, point = _cost(DECODE), ds.DesignPoint.parse_key(key)
    comm = device_time("allgather", cost.comm_bytes, 1, 8, H100, point).seconds
    tc = ShapeModel(cost, 8, H100, "bf16", TENSOR_CORE_TYPICAL).tc
    assert cost.entry_handshake  # the all-gather's pushes wait for the peers to enter the call
    assert _sim(key, DECODE) == pytest.approx(2 * H100.launch_s + comm + H100.barrier_s + H100.link_alpha_s + tc)


@pytest.mark.parametrize("key", ["lsa/sequential/global_barrier/cta/256K/16", FUSED,
                                 "copy_engine/stream_overlap/per_peer_signal/copy_engine/1024K/1"])
def test_waiting_for_the_peers_to_enter_the_call_costs_at_most_one_hop(key):
    # sequential: exactly one hop more; overlapped: the hop joins the transfer, which compute may hide
    point, cost = ds.DesignPoint.parse_key(key), _cost(DECODE)
    times = [ds.estimate(c, point, 8, H100, "bf16", TENSOR_CORE_TYPICAL).simulated
             for c in (cost, dataclasses.replace(cost, entry_handshake=False))]
    extra = times[0] - times[1]
    if point.placement is ds.Placement.SEQUENTIAL:
        assert extra == pytest.approx(H100.link_alpha_s)
    assert 0 <= extra <= H100.link_alpha_s * 1.0001


def test_pcie_and_network_profiles_make_communication_dominate():
    cost = _cost()
    pcie = ds.estimate(cost, ds.DesignPoint.parse_key(FUSED), 8, ds.get_profile("A100-PCIe"), "bf16")
    assert pcie.t_comm > pcie.t_comp
    assert ds.estimate(cost, ds.DesignPoint.parse_key(FUSED), 8, ds.get_profile("A100"), "bf16").t_comm < pcie.t_comm


# Profiles x world sizes the bound is checked on: NVSwitch, mesh, bridge pairs, PCIe, multi-node.
TARGETS = [("H100", 8), ("H100", 2), ("B200", 8), ("A100-mesh", 4), ("H100-PCIe", 4), ("H100-NVL", 8),
           ("H100:2x8:ib400", 16), ("A100:2x8:roce200", 8)]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
UNIFORM = (4096, 256, 2)


@functools.lru_cache(maxsize=None)
def _example_dims(name):
    """Shapes of the pattern's example spec: its first and last sweep shapes and a tiny emulation one."""
    file = EXAMPLES / name / "spec.py"
    if not file.is_file():
        return []
    module_spec = importlib.util.spec_from_file_location(f"_bound_check_{name}", file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)  # example specs import only design_space
    spec = module.SPEC
    return tuple(c.dims for c in (spec.shapes[0], spec.shapes[-1], spec.emulation_shapes[0]) if spec.pattern == name)


def _shapes(pattern, world):
    """The example's shapes, else uniform ones (every dimension the same), that fit ``world``."""
    fits = []
    for dims in _example_dims(pattern.name) or [{d: v for d in pattern.dims} for v in UNIFORM]:
        if pattern.dim_problems(dims, world):
            continue
        try:
            pattern.cost(dims, world, ds.DType.BF16)
        except (ArithmeticError, ValueError, ds.SpecError):
            continue
        fits.append(dims)
    return fits


@pytest.mark.parametrize("name", ds.pattern_names())
def test_every_pattern_has_a_shape_to_check_the_bound_on(name):
    assert _shapes(ds.get_pattern(name), 8), f"{name}: no example or uniform shape fits world 8"


@pytest.mark.parametrize("hw_name,world", TARGETS)
@pytest.mark.parametrize("name", ds.pattern_names())
def test_no_valid_point_of_any_pattern_beats_the_bound_or_the_ceiling(name, hw_name, world):
    pattern, hw = ds.get_pattern(name), ds.get_profile(hw_name)
    shapes = _shapes(pattern, world)
    if not shapes:
        pytest.skip(f"{name}: no shape fits world {world}")
    points, below = ds.valid_points(pattern, hw), []
    for dims in shapes:
        cost = pattern.cost(dims, world, ds.DType.BF16)
        bound = max(t_comp(cost, hw, "bf16"), t_comm_ideal(cost, world, hw))  # what estimate() reports
        assert baseline_time(cost, world, hw, "bf16") >= bound
        shape = ShapeModel(cost, world, hw, "bf16", TENSOR_CORE_TYPICAL)  # the fastest code the model knows
        for point in points:
            t = shape.simulate(point)
            if t < bound * (1 - 1e-12):
                below.append(f"{point.key()} {dims}: {t:.3e} < {bound:.3e}")
            if shape.baseline / t > shape.ceiling * (1 + 1e-9):  # the ceiling holds on every topology too
                below.append(f"{point.key()} {dims}: speedup {shape.baseline / t:.3f} > ceiling {shape.ceiling:.3f}")
    assert not below, below[:5]

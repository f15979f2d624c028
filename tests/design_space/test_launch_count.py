"""The launches an evaluated candidate is charged come from what its code launched at the emulation
shapes, grown with the point's chunk count, not from its (observed) design point."""

import pytest

import design_space as ds
from design_space.code_features import TENSOR_CORE_TYPICAL
from design_space.launch_count import LaunchFit, LaunchSample, fit, launches_at
from design_space.model import ShapeModel

H100 = ds.get_profile("H100")
RS = ds.get_pattern("reducescatter_rmsnorm")
GLOBAL = ds.DesignPoint.parse_key("lsa/stream_overlap/global_barrier/thread/4K/32")
TILED = ds.DesignPoint.parse_key("lsa/stream_overlap/per_tile_signal/thread/4K/32")
SMALL, LARGER = {"m": 20, "n": 64, "rmsnorm": 1, "residual": 1}, {"m": 28, "n": 396, "rmsnorm": 1, "residual": 1}
TARGET = {"m": 4096, "n": 8192, "rmsnorm": 1, "residual": 1}
SEQ = ds.DesignPoint.parse_key("lsa/sequential/global_barrier/warp/4K/4")


def _model(dims, world=8):
    return ShapeModel(RS.cost(dims, world, ds.DType.BF16), world, H100, "bf16", TENSOR_CORE_TYPICAL)


def _sample(dims, launches, world=4):
    return LaunchSample(RS.cost(dims, world, ds.DType.BF16), world, launches)


def test_a_count_that_grows_with_the_chunks_is_extrapolated_along_them():
    code = fit([_sample(SMALL, 3), _sample(LARGER, 11)], SEQ, H100, "bf16")
    c_small, c_larger = (_model(d, 4).chunks(SEQ) for d in (SMALL, LARGER))
    assert c_larger > c_small
    assert code.per_chunk == pytest.approx(8 / (c_larger - c_small))
    target = _model(TARGET)
    charged = launches_at(code, target, SEQ)
    assert charged == pytest.approx(code.fixed + code.per_chunk * target.chunks(SEQ))
    assert charged > 100 * target.launches(SEQ)
    assert target.simulate(SEQ, charged) > target.simulate(SEQ) + 90 * H100.launch_s


def test_a_count_that_does_not_grow_is_not_scaled_and_never_falls_below_a_run():
    code = fit([_sample(SMALL, 5), _sample(LARGER, 5)], SEQ, H100, "bf16")
    assert code.per_chunk == 0 and launches_at(code, _model(TARGET), SEQ) == 5
    shrinking = fit([_sample(SMALL, 7), _sample(LARGER, 4)], SEQ, H100, "bf16")
    assert shrinking.per_chunk == 0 and shrinking.at(10_000) == 7


def test_only_the_largest_world_is_read():
    code = fit([_sample(SMALL, 40, world=2), _sample(SMALL, 3), _sample(LARGER, 3)], SEQ, H100, "bf16")
    assert code.least == 3


def test_code_is_never_charged_fewer_launches_than_its_point():
    # a 256K-chunk pipeline moves one chunk at the emulation shapes: two launches there say
    # nothing about the target shape, where the point's pipeline has hundreds
    target = _model(TARGET)
    code = fit([_sample(SMALL, 2), _sample(LARGER, 2)], TILED, H100, "bf16")
    assert launches_at(code, target, TILED) == target.launches(TILED) > 1000
    assert target.simulate(TILED, launches_at(code, target, TILED)) == target.simulate(TILED)


def test_no_samples_charge_the_points_own_launches():
    assert fit([], TILED, H100, "bf16") is None
    target = _model(TARGET)
    assert launches_at(None, target, TILED) is None
    assert target.simulate(TILED, None) == target.simulate(TILED, target.launches(TILED))


def test_hiding_a_pipelines_waits_gains_no_launches():
    # the same pipelined code with its waits through the comm API (per_tile_signal) and with them
    # hidden from the trace (read as global_barrier): a stream pipeline is charged per chunk
    # whatever its waits, and the hidden one is credited less overlap
    for dims in (TARGET, {**TARGET, "m": 128}):
        target = _model(dims)
        assert target.launches(GLOBAL) == 2 * target.chunks(GLOBAL) + 1 >= target.launches(TILED)
        samples = [_sample(SMALL, 3), _sample(LARGER, 11)]
        hidden = launches_at(fit(samples, GLOBAL, H100, "bf16"), target, GLOBAL)
        seen = launches_at(fit(samples, TILED, H100, "bf16"), target, TILED)
        assert hidden >= seen
        assert target.simulate(GLOBAL, hidden) >= target.simulate(TILED, seen)


def test_more_launches_never_make_a_point_faster_and_a_sequential_schedule_pays_each():
    target = _model({**TARGET, "m": 128})
    assert target.simulate(SEQ, 5) == pytest.approx(target.simulate(SEQ) + 3 * H100.launch_s)
    for point in (GLOBAL, TILED, SEQ):
        times = [target.simulate(point, n) for n in (1, 10, 100, 1000, 100_000)]
        assert times == sorted(times)


def test_a_fit_is_a_line_that_never_falls_below_its_floor():
    line = LaunchFit(fixed=1.0, per_chunk=2.0, least=9.0)
    assert line.at(1) == 9.0 and line.at(100) == 201.0

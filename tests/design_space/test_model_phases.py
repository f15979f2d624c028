"""Two-phase costs (``WorkloadCost.then``, docs/model.md "Two phases"): the model adds the phases'
times, baselines and floors, bounds by the totals, and keeps every single-phase figure as it was."""

import dataclasses
import random

import pytest

import design_space as ds
from design_space.code_features import SCALAR_TYPICAL, TENSOR_CORE_TYPICAL
from design_space.errors import SpecError
from design_space.model import ShapeModel, WorkloadCost, baseline_time, t_comm_ideal, t_comp

H100 = ds.get_profile("H100")
MLP = ds.get_pattern("tp_mlp")
DIMS = {"m": 4096, "h": 8192, "f": 28672, "act": 3}  # Llama-3-70B prefill at TP=8


def _points(n=60):
    return random.Random(1).sample(ds.valid_points(MLP, H100), n)


@pytest.mark.parametrize("features", [TENSOR_CORE_TYPICAL, SCALAR_TYPICAL, None])
def test_two_phases_add_up_phase_by_phase(features):
    cost = MLP.cost(DIMS, 8, ds.DType.BF16)
    up, down = cost.phases
    assert (up.collective, down.collective) == ("allgather", "reducescatter") and down.then is None
    both = ShapeModel(cost, 8, H100, "bf16", features)
    alone = [ShapeModel(dataclasses.replace(up, then=None), 8, H100, "bf16", features),
             ShapeModel(down, 8, H100, "bf16", features)]
    for name in ("t_comp", "t_comm", "baseline_comp", "baseline_comm", "baseline", "comm_floor", "tc"):
        assert getattr(both, name) == pytest.approx(sum(getattr(m, name) for m in alone), rel=1e-12), name
    floors = sum(max(m.baseline_comp, m.comm_floor) + H100.launch_s for m in alone)
    assert both.ceiling == pytest.approx(both.baseline / floors, rel=1e-12)
    assert both.ceiling < max(m.ceiling for m in alone)  # each phase pays its own floor and launch
    for p in _points():
        est = both.estimate(p)
        assert est.simulated == pytest.approx(sum(m.simulate(p) for m in alone), rel=1e-12)
        assert est.bound == max(both.t_comp, both.t_comm) <= est.simulated
        assert est.speedup <= est.ceiling * (1 + 1e-9)


def test_the_module_functions_sum_the_phases():
    cost = MLP.cost(DIMS, 8, ds.DType.BF16)
    up, down = dataclasses.replace(cost, then=None), cost.then
    assert t_comp(cost, H100, "bf16") == pytest.approx(t_comp(up, H100, "bf16") + t_comp(down, H100, "bf16"))
    assert t_comm_ideal(cost, 8, H100) == pytest.approx(t_comm_ideal(up, 8, H100) + t_comm_ideal(down, 8, H100))
    assert baseline_time(cost, 8, H100, "bf16") == pytest.approx(
        baseline_time(up, 8, H100, "bf16") + baseline_time(down, 8, H100, "bf16"))
    assert baseline_time(cost, 8, H100, "bf16") == pytest.approx(ShapeModel(cost, 8, H100, "bf16").baseline)


def test_one_phase_is_the_single_phase_model_exactly():
    cost = ds.get_pattern("gemm_reducescatter").cost({"m": 4096, "n": 8192, "k": 28672}, 8, ds.DType.BF16)
    assert cost.phases == (cost,)
    shape = ShapeModel(cost, 8, H100, "bf16", TENSOR_CORE_TYPICAL)
    (only,) = shape.phases
    for name in ("t_comp", "t_comm", "baseline", "comm_floor", "tc"):
        assert getattr(shape, name) == getattr(only, name)  # exactly: sums of one term
    assert shape.ceiling == shape.baseline / (max(shape.baseline_comp, shape.comm_floor) + H100.launch_s)


def test_a_phase_must_be_a_workload_cost():
    fields = dict(flops=1.0, hbm_bytes=1.0, collective="allgather", comm_bytes=1.0, out_rows=1, out_cols=1,
                  local_fraction=0.5)
    with pytest.raises(SpecError, match="then must be a WorkloadCost"):
        WorkloadCost(**fields, then={"flops": 1.0})
    with pytest.raises(SpecError, match="local_fraction"):
        WorkloadCost(**fields, then=WorkloadCost(**{**fields, "local_fraction": 2.0}))

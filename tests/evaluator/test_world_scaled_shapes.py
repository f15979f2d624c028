"""A dim of the world size (``"16*n"``) through the evaluator: shape draws move its per-rank
coefficient and keep ``n`` itself, the reference and every stage after it see the world's ints,
the model scores it at the target world, and the GPU path hands the device that world's dims."""

from pathlib import Path

import design_space as ds
from design_space import dim_expr
from cuco.spec_loader import load_spec
from evaluator import reference, score, shape_draws
from evaluator.gpu import api as gpu_api

ROOT = Path(__file__).resolve().parents[2]


def _with(name: str, **shapes) -> ds.KernelSpec:
    spec = load_spec(ROOT / "examples" / name)
    data = spec.model_dump()
    for field, dims in shapes.items():
        data[field] = [{"name": f"{field[:3]}-{i}", "dims": d} for i, d in enumerate(dims)]
    data["primary_shape"] = None
    return ds.KernelSpec.model_validate(data)


def test_a_scaled_dim_draws_its_per_rank_coefficient_and_keeps_growing_with_the_world():
    spec = _with("gemm_reducescatter", emulation_shapes=[{"m": 128, "n": 128, "k": "16*n"}])
    pattern = ds.get_pattern(spec.pattern)
    drawn = shape_draws.variants(pattern, spec.emulation_shapes[0], spec.emulation_world_sizes, 6, seed=3)
    assert len(drawn) == 6
    per_rank = set()
    for s in drawn:
        a, b = dim_expr.linear(s.dims["k"])
        assert b == 0 and 8 <= a <= 20 and a % 4 == 0, s.dims  # around 16, a multiple of lcm(2, 4) as 16 is
        per_rank.add(a)
        assert all(not pattern.dim_problems(s.at(w), w) for w in spec.emulation_world_sizes)
    assert len(per_rank) > 1  # a candidate cannot be written for 16 per rank


def test_one_per_rank_is_the_workloads_structure_and_is_kept_as_written():
    spec = _with("moe_dispatch_combine",
                 emulation_shapes=[{"t": 12, "h": 256, "f": 32, "e": "n", "k": 2, "skew": 150}])
    pattern = ds.get_pattern(spec.pattern)
    drawn = shape_draws.variants(pattern, spec.emulation_shapes[0], spec.emulation_world_sizes, 4, seed=1)
    assert drawn and all(s.dims["e"] == "n" for s in drawn)
    assert {s.dims["t"] for s in drawn} != {12}  # the fixed dims still vary


def test_reference_cases_carry_the_dims_of_their_world(tmp_path):
    spec = _with("gemm_reducescatter", emulation_shapes=[{"m": 8, "n": 16, "k": "4*n"}])
    cases = reference.prepare(spec, ds.get_pattern(spec.pattern), tmp_path, worlds=(2, 4),
                              cases=spec.emulation_shapes)
    for c in cases:
        assert c.shape.name == "emu-0" and c.shape.dims == {"m": 8, "n": 16, "k": 4 * c.world}
        assert c.ranks[0].inputs[0].shape == (8, 4)  # A_r [M, K/n]: four columns per rank at every world


def test_the_model_scores_a_scaled_dim_at_the_target_world():
    scaled = _with("gemm_reducescatter", shapes=[{"m": 4096, "n": 8192, "k": "3584*n"}])
    fixed = _with("gemm_reducescatter", shapes=[{"m": 4096, "n": 8192, "k": 3584 * 8}])
    pattern, hw = ds.get_pattern(scaled.pattern), ds.get_profile(scaled.hardware)
    point = next(iter(ds.valid_points(pattern, hw)))
    a = score.simulate(scaled, pattern, hw, point, None, None)
    b = score.simulate(fixed, pattern, hw, point, None, None)
    assert scaled.target_world == 8 and [t.seconds for t in a] == [t.seconds for t in b]
    assert [t.bound_seconds for t in a] == [t.bound_seconds for t in b]


def test_the_gpu_path_hands_the_device_the_dims_of_its_world():
    spec = _with("gemm_reducescatter", shapes=[{"m": 64, "n": 48, "k": "64*n"}])
    pattern = ds.get_pattern(spec.pattern)
    assert gpu_api.fitting_shapes(pattern, spec.shapes, 4) == list(spec.shapes)
    case = gpu_api._case(pattern, spec, spec.shapes[0], 4)
    assert case["dims"] == {"m": 64, "n": 48, "k": 256} and case["dims_list"] == [64, 48, 256]

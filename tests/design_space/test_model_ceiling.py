"""No simulated speedup beats the ceiling built from the baseline's own times, for every valid
point of every example workload, every shape of its sweep, on H100 and A100, for a tensor-core
candidate and for a scalar one (docs/model.md, "The speedup ceiling")."""

import functools
import importlib.util
from pathlib import Path

import pytest

import design_space as ds
from design_space.code_features import SCALAR_TYPICAL, TENSOR_CORE_TYPICAL
from design_space.model import ShapeModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@functools.lru_cache(maxsize=None)
def _specs() -> tuple:
    """Every example's SPEC (example specs import only design_space)."""
    specs = []
    for file in sorted(EXAMPLES.glob("*/spec.py")):
        module_spec = importlib.util.spec_from_file_location(f"_ceiling_{file.parent.name}", file)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        specs.append(module.SPEC)
    return tuple(specs)


@functools.lru_cache(maxsize=None)
def _points(spec_name: str, hw_name: str) -> tuple:
    spec = next(s for s in _specs() if s.name == spec_name)
    return tuple(ds.valid_points(ds.get_pattern(spec.pattern), ds.get_profile(hw_name), spec.restrictions))


def test_every_example_workload_is_checked():
    assert {s.pattern for s in _specs()} == set(ds.pattern_names())


@pytest.mark.parametrize("features", [TENSOR_CORE_TYPICAL, SCALAR_TYPICAL], ids=["tensor_core", "scalar"])
@pytest.mark.parametrize("hw_name", ["H100", "A100"])
def test_no_simulated_speedup_exceeds_the_ceiling(hw_name, features):
    hw, over, checked, closest = ds.get_profile(hw_name), [], 0, 0.0
    for spec in _specs():
        pattern, world, dtype = ds.get_pattern(spec.pattern), spec.target_world, spec.dtype
        for case in spec.shapes:
            shape = ShapeModel(pattern.cost(case.dims, world, dtype), world, hw, dtype.value, features)
            best = min(shape.simulate(p) for p in _points(spec.name, hw_name))
            checked += len(_points(spec.name, hw_name))
            speedup = shape.baseline / best
            closest = max(closest, speedup / shape.ceiling)
            if speedup > shape.ceiling * (1 + 1e-9):
                over.append(f"{spec.name}/{case.name}: {speedup:.3f}x > ceiling {shape.ceiling:.3f}x")
    assert not over, over[:5]
    assert checked > 5000  # thousands of points per profile, not a vacuous pass
    if features is TENSOR_CORE_TYPICAL:
        assert closest > 0.5  # the ceiling is a real limit: the best points come near it


def test_the_ceiling_reduces_to_the_overlap_limit_when_nccl_is_already_optimal():
    # prefill all-gather + GEMM on H100: compute-bound, so only overlap (and launches) can win
    cost = ds.get_pattern("allgather_gemm").cost({"m": 4096, "n": 49152, "k": 12288}, 8, ds.DType.BF16)
    shape = ShapeModel(cost, 8, ds.get_profile("H100"), "bf16", TENSOR_CORE_TYPICAL)
    launches = 2 * shape.hw.launch_s
    overlap = (shape.baseline_comp + shape.baseline_comm) / max(shape.baseline_comp, shape.baseline_comm)
    assert shape.ceiling == pytest.approx(overlap, rel=0.01)
    assert shape.ceiling <= (shape.baseline_comp + shape.baseline_comm + launches) / shape.baseline_comp


@pytest.mark.parametrize("hw_name", ["H100", "A100"])
def test_hiding_synchronisation_never_pays(hw_name):
    """Signals and waits the comm API does not carry are invisible to the emulator's trace, which
    then reads the code as global_barrier: the global_barrier twin of every finer point (same
    backend, placement, issuer, chunk and comm CTAs) simulates no faster, shape by shape."""
    hw, faster, pairs = ds.get_profile(hw_name), [], 0
    for spec in _specs():
        pattern, world, dtype = ds.get_pattern(spec.pattern), spec.target_world, spec.dtype
        points = set(_points(spec.name, hw_name))
        twins = [(p, p.model_copy(update={"sync_scope": ds.SyncScope.GLOBAL_BARRIER})) for p in points
                 if p.sync_scope is not ds.SyncScope.GLOBAL_BARRIER]
        twins = [(p, t) for p, t in twins if t in points]
        for case in spec.shapes:
            shape = ShapeModel(pattern.cost(case.dims, world, dtype), world, hw, dtype.value, TENSOR_CORE_TYPICAL)
            for fine, hidden in twins:
                pairs += 1
                if shape.simulate(hidden) < shape.simulate(fine) * (1 - 1e-9):
                    faster.append(f"{spec.name}/{case.name}: {hidden.key()} {shape.simulate(hidden):.3g} s "
                                  f"< {fine.key()} {shape.simulate(fine):.3g} s")
    assert pairs > 10_000
    assert not faster, (len(faster), faster[:5])

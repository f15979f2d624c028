"""Emulation shapes drawn per evaluation around the spec's: valid, ragged, reproducible, and
different candidates meet different ones."""

from pathlib import Path

import design_space as ds
from cuco.spec_loader import load_spec
from evaluator import shape_draws

ROOT = Path(__file__).resolve().parents[2]


def pool_of(name: str, count: int = 3, seed: int = 0):
    spec = load_spec(ROOT / "examples" / name)
    pattern = ds.get_pattern(spec.pattern)
    return spec, pattern, shape_draws.shape_pool(pattern, spec.emulation_shapes, spec.emulation_world_sizes, count, seed)


def test_every_drawn_shape_fits_every_emulation_world_and_keeps_the_flags():
    for name in ("allgather_gemm", "gemm_allreduce", "moe_dispatch_combine", "ring_attention", "kv_cache_transfer"):
        spec, pattern, pool = pool_of(name)
        for base in spec.emulation_shapes:
            drawn = pool[base.name][1:]
            assert len(drawn) == 3, (name, base.name)
            for s in drawn:
                assert all(not pattern.dim_problems(s.dims, w) for w in spec.emulation_world_sizes)
                fixed = set(pattern.dims) - set(pattern.varied_dims or pattern.dims)
                # a flag stays as the spec gives it (or left out: allgather_gemm's optional bias)
                assert {d: s.dims.get(d) for d in fixed} == {d: base.dims.get(d) for d in fixed}
                assert all(base.dims[d] // 2 <= v <= base.dims[d] + base.dims[d] // 4 for d, v in s.dims.items())


def test_draws_are_ragged_and_reproducible_per_seed():
    _, _, a = pool_of("allgather_gemm", seed=1)
    _, _, b = pool_of("allgather_gemm", seed=1)
    _, _, c = pool_of("allgather_gemm", seed=2)
    assert a == b and a != c
    ks = [s.dims["k"] for options in a.values() for s in options[1:]]
    assert any(k % 32 for k in ks)  # not only tile multiples


def test_an_evaluation_meets_drawn_shapes_chosen_by_its_candidate():
    _, _, pool = pool_of("allgather_gemm")
    one = shape_draws.pick(pool, "candidate-a")
    assert one == shape_draws.pick(pool, "candidate-a")
    assert all(s.name != base for s, base in zip(one, sorted(pool)))  # never the spec's own shape
    picks = {tuple(s.name for s in shape_draws.pick(pool, f"candidate-{i}")) for i in range(20)}
    assert len(picks) > 1

"""Every workload's template family builds with nvcc for the older GPU generation it targets too: a
seeded sample of the points valid on A100 built for sm_80 (nccl comm backend), whose SASS holds
tensor-core MMA instructions (the per-kernel sm_80 check is the families' slow set). The H100 side
(sm_90) is each family's own seeded-sample test in tests/kernels/families, which builds and
emulates its points (every example targets H100); the full sweep of every point on both is
scripts/check_all_points.py --all."""

import os
import random
from pathlib import Path

import pytest

import design_space as ds
from cuco.spec_loader import load_spec
from evaluator import build, sass, toolchain

ROOT = Path(__file__).resolve().parents[2]
GEMM_FREE = {"reducescatter_rmsnorm", "ulysses_seq_to_head", "ulysses_head_to_seq"}
SPECS = sorted(p.parent for p in (ROOT / "examples").glob("*/spec.py"))
SAMPLE = int(os.environ.get("CUCO_BUILD_SAMPLE", "2"))


def test_every_workload_has_an_example_and_a_registered_family():
    specs = [load_spec(folder) for folder in SPECS]
    names = {s.pattern for s in specs}
    assert {s.hardware for s in specs} == {"H100"}  # so the family tests' samples are the sm_90 builds
    assert {"allgather_gemm", "gemm_reducescatter", "gemm_allreduce", "moe_dispatch_combine", "ring_attention",
            "kv_cache_transfer"} <= names
    assert names <= set(ds.pattern_names())


@pytest.mark.parametrize("profile", ["A100"])
@pytest.mark.parametrize("folder", SPECS, ids=[p.name for p in SPECS])
def test_a_seeded_sample_builds_for_the_profile_arch(folder, profile, shared_cache, tmp_path):
    spec = load_spec(folder)
    hw = ds.get_profile(profile)
    points = ds.valid_points(ds.get_pattern(spec.pattern), hw, spec.restrictions)
    assert points, f"{spec.name} has no valid point on {profile}"
    for point in random.Random(f"{spec.name}-{profile}").sample(points, min(SAMPLE, len(points))):
        source = ds.get_pattern(spec.pattern).render(point)
        res = build.build(source, arch=hw.arch, comm_backend="nccl",
                          dtype_code=spec.dtype.code, tc=toolchain.toolchain(), cache_dir=shared_cache,
                          work_dir=tmp_path / point.key().replace("/", "_"), timeout_s=300)
        assert res.ok, f"{point.key()} for {hw.arch}:\n{res.log[-2000:]}"
        # every family's GEMM goes through the tensor-core tile; the families with no GEMM of their
        # own (the reduce-scatter's partials come from a GEMM done elsewhere) are named, not guessed
        if sass.sass_tool() is not None and spec.pattern not in GEMM_FREE:
            assert any(k.mma > 0 for k in res.stats.kernels), (point.key(), res.stats.kernels)

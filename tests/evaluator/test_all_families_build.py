"""Every workload's template family builds with nvcc for both GPU generations it targets: a seeded
sample of the points valid on A100 built for sm_80 and of those valid on H100 built for sm_90
(nccl comm backend). The per-workload tests emulate their own samples; the full sweep of every
point is scripts/check_all_points.py --all."""

import os
import random
from pathlib import Path

import pytest

import design_space as ds
from cuco.spec_loader import load_spec
from evaluator import build, toolchain

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(p.parent for p in (ROOT / "examples").glob("*/spec.py"))
SAMPLE = int(os.environ.get("CUCO_BUILD_SAMPLE", "2"))


def test_every_workload_has_an_example_and_a_registered_family():
    names = {load_spec(folder).pattern for folder in SPECS}
    assert {"allgather_gemm", "gemm_reducescatter", "gemm_allreduce", "moe_dispatch_combine", "ring_attention",
            "kv_cache_transfer"} <= names
    assert names <= set(ds.pattern_names())


@pytest.mark.parametrize("profile", ["A100", "H100"])
@pytest.mark.parametrize("folder", SPECS, ids=[p.name for p in SPECS])
def test_a_seeded_sample_builds_for_the_profile_arch(folder, profile, shared_cache, tmp_path):
    spec = load_spec(folder)
    hw = ds.get_profile(profile)
    points = ds.valid_points(ds.get_pattern(spec.pattern), hw, spec.restrictions)
    assert points, f"{spec.name} has no valid point on {profile}"
    for point in random.Random(f"{spec.name}-{profile}").sample(points, min(SAMPLE, len(points))):
        res = build.build(ds.get_pattern(spec.pattern).render(point), arch=hw.arch, comm_backend="nccl",
                          dtype_code=spec.dtype.code, tc=toolchain.toolchain(), cache_dir=shared_cache,
                          work_dir=tmp_path / point.key().replace("/", "_"), timeout_s=300)
        assert res.ok, f"{point.key()} for {hw.arch}:\n{res.log[-2000:]}"

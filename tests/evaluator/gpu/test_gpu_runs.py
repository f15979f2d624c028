"""GPU-only: virtual-rank verification of a template, multi-rank verification at world = device
count, a co-residency refusal, a wrong result caught, and a bench. Skipped without a CUDA GPU."""

import random

import pytest

import design_space as ds
from cuco.spec_loader import load_spec
from design_space.evaluation import Status, Tier, TimingSource
from evaluator.gpu import bench, verify
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.gpu

GREEDY = r"""
#include "cuco_comm.h"
__global__ void greedy_kernel(cuco_ctx c) { cuco_barrier(c, 0); }
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t s) {
  greedy_kernel<<<ctx->num_sms * 64, 1024, 0, s>>>(*ctx);  // far more blocks than can be resident
  return (int)cudaGetLastError();
}
"""


@pytest.fixture(scope="module")
def case():
    spec = load_spec(EXAMPLE)
    pattern = ds.get_pattern(spec.pattern)
    points = [p for p in ds.valid_points(pattern, ds.get_profile("H200"), spec.restrictions)
              if p.backend is ds.Backend.LSA]
    point = random.Random(1).choice(points)
    return spec, pattern, point, pattern.render(point)


def test_virtual_ranks_verify_a_template(case, tmp_path, shared_cache):
    spec, pattern, point, source = case
    out = verify(source, spec, pattern, point, mode="virtual", backend="symm", world=2, trials=2,
                 work_dir=tmp_path, cache_dir=shared_cache, timeout_s=300)
    assert out.status is Status.OK, out.reason + "\n" + out.log[-3000:]
    assert out.checks and all(c.tier is Tier.VERIFIED and c.ok for c in out.checks)
    assert {c.rank for c in out.checks} == {0, 1}


def test_an_output_left_unwritten_is_a_wrong_result(case, tmp_path, shared_cache):
    spec, pattern, point, source = case
    broken = source.replace("extern \"C\" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {",
                            "extern \"C\" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) { return 0;", 1)
    assert broken != source
    out = verify(broken, spec, pattern, point, mode="virtual", world=2, trials=1, work_dir=tmp_path,
                 cache_dir=shared_cache, timeout_s=300)
    assert out.status is Status.WRONG_RESULT
    assert any(c.unwritten > 0 for c in out.checks)


def test_a_launch_beyond_co_residency_is_refused_not_deadlocked(case, tmp_path, shared_cache):
    spec, pattern, point, _ = case
    out = verify(GREEDY, spec, pattern, None, mode="virtual", world=2, trials=1, work_dir=tmp_path,
                 cache_dir=shared_cache, timeout_s=120)
    assert out.status is Status.REJECTED
    assert "exceeds co-residency" in out.reason and "greedy_kernel" in out.reason


def test_multi_rank_verification_at_the_device_count(case, tmp_path, shared_cache):
    import torch

    world = torch.cuda.device_count()
    if world < 2:
        pytest.skip("needs at least 2 GPUs for multi-rank verification")
    spec, pattern, point, source = case
    shapes = [s for s in spec.emulation_shapes if not pattern.dim_problems(s.dims, world)]
    out = verify(source, spec, pattern, point, mode="multi", backend="symm", world=world, shapes=shapes,
                 trials=2, work_dir=tmp_path, cache_dir=shared_cache, timeout_s=300)
    assert out.status is Status.OK, out.reason + "\n" + out.log[-3000:]
    assert {c.rank for c in out.checks} == set(range(world))


def test_bench_reports_measured_timings_with_a_bound(case, tmp_path, shared_cache):
    spec, pattern, point, source = case
    out = bench(source, spec, pattern, point, mode="virtual", backend="symm", world=2,
                shapes=list(spec.emulation_shapes[:1]), work_dir=tmp_path, cache_dir=shared_cache, timeout_s=300,
                warmup=2, iters=10)
    assert out.status is Status.OK, out.reason
    assert out.timings and all(t.source is TimingSource.MEASURED and t.seconds > 0 for t in out.timings)
    assert out.details[0]["n"] == 10

"""The cascade's GPU setting: without a GPU, `auto` runs the CPU cascade, `require` refuses with
the fix, a typo is refused; with a GPU (skipped here) an evaluation carries GPU-verified checks."""

import pytest

import design_space as ds
from evaluator.cascade import Evaluator, EvaluatorConfig
from evaluator.gpu import stages

GOOD = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")


def test_no_gpu_means_no_gpu_plan_here(example_spec, has_cuda_gpu):
    if has_cuda_gpu:
        pytest.skip("this machine has a GPU")
    assert stages.plan(example_spec, "nccl") is None


def test_require_refuses_a_machine_without_a_gpu_and_names_the_fix(example_spec, shared_cache, has_cuda_gpu):
    if has_cuda_gpu:
        pytest.skip("this machine has a GPU")
    with pytest.raises(ds.ConfigError) as err:
        Evaluator(example_spec, EvaluatorConfig(cache_dir=shared_cache, gpu="require"))
    assert "no usable CUDA GPU" in str(err.value) and "--gpu auto" in err.value.fix


def test_an_unknown_gpu_setting_is_refused(example_spec, shared_cache):
    with pytest.raises(ds.ConfigError, match="unknown GPU setting"):
        Evaluator(example_spec, EvaluatorConfig(cache_dir=shared_cache, gpu="yes"))


def test_without_a_gpu_an_evaluation_is_emulated_and_simulated_and_says_what_sandbox_it_had(example_evaluator,
                                                                                              has_cuda_gpu):
    if has_cuda_gpu:
        pytest.skip("this machine has a GPU")
    pattern = ds.get_pattern("allgather_gemm")
    ev = example_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=pattern.render(GOOD),
                                                 point=GOOD))
    assert ev.status is ds.Status.OK and ev.stage is ds.Stage.SIMULATE
    assert {c.tier for c in ev.checks} == {ds.Tier.EMULATED}
    assert all(t.source is ds.TimingSource.SIMULATED for t in ev.timings)
    assert any(f.startswith("sandbox: net=") for f in ev.flags)


@pytest.mark.gpu
def test_with_a_gpu_an_evaluation_carries_gpu_verified_checks(example_spec, shared_cache):
    evaluator = Evaluator(example_spec, EvaluatorConfig(cache_dir=shared_cache, gpu="require"))
    pattern = ds.get_pattern("allgather_gemm")
    ev = evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="template"), source=pattern.render(GOOD), point=GOOD))
    assert ev.status is ds.Status.OK, ev.reason
    assert ds.Tier.VERIFIED in {c.tier for c in ev.checks}
    assert any(f.startswith("verified_on_gpu") for f in ev.flags)
    if evaluator.gpu.bench:
        assert ev.timings and all(t.source is ds.TimingSource.MEASURED for t in ev.timings)

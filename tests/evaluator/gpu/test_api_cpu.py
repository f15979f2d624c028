"""The GPU facade's CPU-side parts: a build failure is an outcome, a virtual job carries the
spec's reference data made before the run, and rank results merge with the crash first."""

import json

import pytest

import design_space as ds
from design_space.evaluation import Status
from evaluator.gpu import api, worker


@pytest.fixture(scope="module")
def spec_pattern(example_spec):
    return example_spec, ds.get_pattern(example_spec.pattern)


def test_a_candidate_that_does_not_compile_is_build_failed(spec_pattern, tmp_path, shared_cache):
    spec, pattern = spec_pattern
    out = api.verify("this is not cuda", spec, pattern, work_dir=tmp_path, cache_dir=shared_cache)
    assert out.status is Status.BUILD_FAILED and out.reason


def test_a_virtual_job_holds_the_references_made_before_the_run(spec_pattern, tmp_path, shared_cache):
    spec, pattern = spec_pattern
    point = ds.valid_points(pattern, ds.get_profile("H200"), spec.restrictions)[0]
    job, log = api.prepare_virtual_job(pattern.render(point), spec, pattern, world=2, shapes=spec.emulation_shapes,
                                       trials=2, seed=3, task="verify", work_dir=tmp_path, cache_dir=shared_cache)
    assert job is not None, log
    assert job["mode"] == "virtual" and job["world"] == 2 and job["lib"].endswith(".so")
    case = job["cases"][0]
    assert case["dims_list"] == [case["dims"][d] for d in pattern.dims]
    assert len(case["trials"]) == 2 and len(case["trials"][0]["ranks"]) == 2
    files = [t["path"] for t in case["trials"][0]["ranks"][1]["outputs"]]
    assert files and all(open(f, "rb").read(1) for f in files)
    assert job["tolerance"] == {"atol": spec.tolerances[spec.dtype].atol, "rtol": spec.tolerances[spec.dtype].rtol}
    json.dumps(job)  # the worker reads it as JSON


def test_rank_results_merge_with_the_crash_explaining_the_others(tmp_path):
    job = {"world": 3}
    parts = [{"status": "timeout", "reason": "r0 waited"}, {"status": "crashed", "reason": "r1 illegal address"}]
    for r, p in enumerate(parts):
        (tmp_path / f"result_r{r}.json").write_text(json.dumps({**p, "checks": [], "log": [], "env": {},
                                                                "timings": []}))
    result = worker.new_result()
    worker.merge_rank_results(job, tmp_path, result, [1, 1, -9])
    assert (result["status"], result["reason"]) == ("crashed", "r1 illegal address")

"""Launchers: one protocol over a local pool, Ray and Slurm (submitit). A job crosses process
boundaries as JSON and evaluates to the same verdict; GPU sets handed to concurrent jobs never
overlap."""

import threading
import time

import pytest

import design_space as ds
from design_space.errors import ConfigError
from design_space.point import DesignPoint
from evaluator import launchers

POINT = "lsa/sequential/global_barrier/cta/64K/4"


def test_gpu_ids_are_read_from_ranges_and_lists():
    assert launchers.parse_gpus("0-3,6") == (0, 1, 2, 3, 6) and launchers.parse_gpus("") == ()
    with pytest.raises(ConfigError, match="--gpus"):
        launchers.parse_gpus("0-x")


def test_concurrent_jobs_never_share_a_gpu():
    alloc = launchers.GpuAllocator(range(8))
    held, overlaps, lock = set(), [], threading.Lock()

    def job(n):
        got = alloc.acquire(n)
        with lock:
            if held & set(got):
                overlaps.append(got)
            held.update(got)
        time.sleep(0.01)
        with lock:
            held.difference_update(got)
        alloc.release(got)

    threads = [threading.Thread(target=job, args=(n,)) for n in (4, 2, 8, 1, 3, 4, 2, 8) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert overlaps == [] and sorted(alloc.free) == list(range(8))
    with pytest.raises(ConfigError, match="needs 9 GPUs"):
        alloc.acquire(9)


def _job(example_evaluator):
    pattern = example_evaluator.pattern
    cand = ds.Candidate(origin=ds.Origin(kind="template"), source=pattern.render(DesignPoint.parse_key(POINT)),
                        point=DesignPoint.parse_key(POINT))
    return cand, launchers.job_for(example_evaluator, cand, None, None)


def test_a_job_evaluates_as_json_to_the_same_verdict_as_in_process(example_evaluator):
    cand, job = _job(example_evaluator)
    here = example_evaluator.evaluate(cand)
    there = launchers.LocalLauncher(1).submit(job).result(timeout=600)
    assert here.status is there.status is ds.Status.OK
    assert there.observed_point == here.observed_point and there.speedup == pytest.approx(here.speedup)


def test_ray_runs_the_job_as_a_task_with_a_stand_in_gpu_resource(example_evaluator):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'cuco-kernels[ray]')")
    cand, job = _job(example_evaluator)
    launcher = launchers.RayLauncher(gpu_resource="stand_in_gpu",
                                     init_kwargs={"num_cpus": 2, "resources": {"stand_in_gpu": 2}})
    try:
        from dataclasses import replace
        ev = launcher.submit(replace(job, gpus=1)).result(timeout=600)
        assert ev.status is ds.Status.OK and ev.candidate_id == cand.id
    finally:
        ray.shutdown()


def test_slurm_runs_the_job_on_submitits_local_executor(example_evaluator, tmp_path):
    pytest.importorskip("submitit", reason="the slurm extra is not installed (pip install 'cuco-kernels[slurm]')")
    cand, job = _job(example_evaluator)
    ev = launchers.SlurmLauncher(tmp_path / "slurm", slots=1, cluster="local").submit(job).result(timeout=600)
    assert ev.status is ds.Status.OK and ev.candidate_id == cand.id

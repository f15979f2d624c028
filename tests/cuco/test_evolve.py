"""The evolution loop end to end: faults are data, the run goes on, and a rerun resumes."""

import pytest

import cuco
import design_space as ds
from agents import register_proposer
from candidates_db import Store

PATTERN = ds.get_pattern("allgather_gemm")
GOOD = ds.DesignPoint.parse_key("lsa/fused_persistent/per_tile_signal/cta/16K/2")


def _faulty_sources():
    good = PATTERN.render(GOOD)
    entry = 'extern "C" int cuco_run'
    kernel = "static __device__ void gemm_tile("
    return {
        "not_compilable": good.replace("const Problem p = problem(c);", "const Problem p = problem(c) +;", 1),
        "crash": good.replace(kernel, "static __device__ void boom(const cuco_ctx& c) { "
                              "*(volatile int*)(c.dims[7]) = 1; }\n" + kernel, 1)
                     .replace("  const Problem p = problem(c);\n  if ((int)blockIdx.x < COMM_CTAS)",
                              "  boom(c);\n  const Problem p = problem(c);\n  if ((int)blockIdx.x < COMM_CTAS)", 1),
        "hang": good.replace(entry, "static __global__ void spin(volatile int* f) { while (f[0] == 0) {} }\n"
                             + entry, 1)
                    .replace("  fused_kernel<<<", "  spin<<<1, 1, 0, stream>>>((volatile int*)c.signals);\n"
                             "  fused_kernel<<<", 1),
        "wrong_result": good.replace("B, p.Nl, p.Nl - col0, p.K);", "B, p.Nl, p.Nl - col0, p.K - 1);"),
    }


class FaultyProposer:
    """Proposes one good template candidate and four broken ones in generation 0."""

    name = "test-faults"

    def propose(self, request):
        if request.generation > 0:
            return []
        out = [ds.Candidate(origin=ds.Origin(kind="manual", patch_type=kind), source=src)
               for kind, src in _faulty_sources().items()]
        out.append(ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(GOOD), point=GOOD))
        return out[: request.count]


register_proposer("test-faults", FaultyProposer)


def test_faulty_candidates_are_stored_with_their_status_and_the_run_goes_on(example_spec, tmp_path):
    summary = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=5, proposer="test-faults",
                          emulation_timeout_s=8, workers=2)
    assert summary.run.status is ds.RunStatus.COMPLETE
    with Store.open(tmp_path / "cuco.db") as store:
        by_kind = {c.origin.patch_type or "good": store.evaluation(c.id) for c in store.candidates(summary.run.name)}
    expected = {"not_compilable": ds.Status.BUILD_FAILED, "crash": ds.Status.CRASHED, "hang": ds.Status.TIMEOUT,
                "wrong_result": ds.Status.WRONG_RESULT, "good": ds.Status.OK}
    assert {k: e.status for k, e in by_kind.items()} == expected
    for kind, ev in by_kind.items():
        if kind != "good":
            assert ev.reason and ev.logs and len(ev.logs) <= ds.evaluation.LOG_LIMIT + 100
            assert ev.fitness is None
    assert "SIGSEGV" in by_kind["crash"].reason or "crash" in by_kind["crash"].reason
    good = by_kind["good"]
    assert good.timing_source is ds.TimingSource.SIMULATED and good.checked_worlds() == (2, 4)
    assert summary.best is not None and summary.best[0].point == GOOD


def test_a_rerun_resumes_instead_of_starting_over(example_spec, tmp_path):
    first = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=3, workers=2)
    assert not first.resumed and first.evaluated_now == 3
    again = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=3, workers=2)
    assert again.resumed and again.evaluated_now == 0
    more = cuco.evolve(example_spec, run_dir=tmp_path, generations=2, population=3, workers=2)
    assert more.resumed and more.evaluated_now == 3
    with Store.open(tmp_path / "cuco.db") as store:
        cands = store.candidates(example_spec.name)
        assert [c.generation for c in cands].count(0) == 3 and [c.generation for c in cands].count(1) == 3
        assert len({c.content_hash for c in cands}) == 6
        assert all(store.evaluation(c.id) is not None for c in cands)
        assert any(c.parent_ids for c in cands if c.generation == 1)


def test_candidates_left_unevaluated_by_a_killed_run_are_evaluated_on_resume(example_spec, tmp_path):
    cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=2, workers=2)
    orphan = ds.Candidate(origin=ds.Origin(kind="template"), source=PATTERN.render(GOOD), point=GOOD)
    with Store.open(tmp_path / "cuco.db") as store:
        assert store.add_candidate(example_spec.name, orphan)
    resumed = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=2, workers=2)
    assert resumed.evaluated_now == 1
    with Store.open(tmp_path / "cuco.db") as store:
        assert store.evaluation(orphan.id).status is ds.Status.OK


def test_a_different_spec_under_the_same_run_name_is_refused(example_spec, tmp_path):
    cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=1, workers=1)
    changed = example_spec.model_copy(update={"description": "something else"})
    with pytest.raises(ds.StoreError, match="different spec"):
        cuco.evolve(changed, run_dir=tmp_path, generations=1, population=1)


def test_max_wall_stops_cleanly_and_the_next_run_finishes(example_spec, tmp_path):
    stopped = cuco.evolve(example_spec, run_dir=tmp_path, generations=3, population=2, workers=1, max_wall_s=0.01)
    assert stopped.run.status is ds.RunStatus.STOPPED and "max-wall" in stopped.run.note
    done = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=2, workers=1)
    assert done.run.status is ds.RunStatus.COMPLETE


class HangProposer:
    """Proposes only a livelocked candidate: it keeps changing memory and yielding, so no deadlock
    detector can call it stuck; only a time limit ends it."""

    name = "test-hang"

    def propose(self, request):
        spin = ("static __global__ void spin(unsigned long long* f) { for (;;) { atomicAdd(f, 1ull); "
                "__nanosleep(100); } }\n")
        hang = PATTERN.render(GOOD).replace('extern "C" int cuco_run', spin + 'extern "C" int cuco_run', 1).replace(
            "  fused_kernel<<<", "  spin<<<1, 1, 0, stream>>>((unsigned long long*)c.workspace);\n  fused_kernel<<<", 1)
        return [ds.Candidate(origin=ds.Origin(kind="manual", patch_type="hang"), source=hang)][: request.count]


register_proposer("test-hang", HangProposer)


def test_max_wall_cuts_a_hanging_candidate_on_time_and_stores_it_as_timeout(example_evaluator, tmp_path):
    # its own emulation limit (10 min) is far past the deadline: only --max-wall can end it on time
    import time
    max_wall = 25.0
    start = time.monotonic()
    summary = cuco.evolve(example_evaluator.spec, run_dir=tmp_path, generations=2, population=1, workers=1,
                          proposer="test-hang", emulation_timeout_s=600, max_wall_s=max_wall)
    elapsed = time.monotonic() - start
    assert elapsed < max_wall + 15, f"the run took {elapsed:.1f} s with --max-wall {max_wall}"
    with Store.open(tmp_path / "cuco.db") as store:
        (cand,) = store.candidates(summary.run.name)
        ev = store.evaluation(cand.id)
    assert summary.run.status is ds.RunStatus.STOPPED and "max-wall" in summary.run.note, (ev.status, ev.reason)
    assert ev.status is ds.Status.TIMEOUT and "--max-wall" in ev.reason and "cut_by_max_wall" in ev.flags


def test_python_api_takes_a_spec_path_too(tmp_path):
    from tests.conftest import EXAMPLE

    summary = cuco.evolve(str(EXAMPLE), run_dir=tmp_path, generations=1, population=1, workers=1)
    assert summary.run.spec_name == "allgather_gemm" and summary.evaluated_now == 1
    assert summary.best is not None and summary.best[1].status is ds.Status.OK

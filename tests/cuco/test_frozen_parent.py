"""The loop holds every child to its first parent's frozen code, whichever proposer made it: honest
template children pass, a child that changes code outside the evolve blocks is rejected."""

import cuco
import design_space as ds
from candidates_db import Store


def _evaluations(tmp_path, run):
    with Store.open(tmp_path / "cuco.db") as store:
        return [(c, store.evaluation(c.id)) for c in store.candidates(run)]


def test_honest_template_children_are_not_refused_for_frozen_code(example_spec, tmp_path):
    summary = cuco.evolve(example_spec, run_dir=tmp_path, generations=2, population=3, workers=2)
    stored = _evaluations(tmp_path, summary.run.name)
    children = [(c, ev) for c, ev in stored if c.parent_ids]
    assert children, "generation 1 should hold template children of generation 0"
    for c, ev in stored:
        assert "frozen_region_changed" not in ev.reason, (c.origin.label(), ev.reason)
    assert all(ev.status is ds.Status.OK for _, ev in children), [(c.point.key(), ev.reason) for c, ev in children]


def test_a_child_that_changes_frozen_code_is_rejected_and_one_without_a_stored_parent_too(example_spec, tmp_path):
    first = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=1, workers=1)
    (parent,) = [c for c, _ in _evaluations(tmp_path, first.run.name)]
    include = '#include "cuco_comm.h"'
    assert parent.source.index(include) < parent.source.index(ds.candidate.EVOLVE_START)
    tampered = parent.source.replace(include, include + "\nstatic __device__ int outside_the_blocks = 1;", 1)
    child = ds.Candidate(parent_ids=(parent.id,), origin=ds.Origin(kind="llm", model="m", patch_type="diff"),
                         source=tampered, point=parent.point)
    orphan = ds.Candidate(parent_ids=("feedfacecafe",), origin=ds.Origin(kind="manual"),
                          source=parent.source.replace("#define COMM_THREADS 256", "#define COMM_THREADS 128", 1),
                          point=parent.point)
    with Store.open(tmp_path / "cuco.db") as store:  # as a killed run leaves them: stored, not evaluated
        assert store.add_candidate(first.run.name, child) and store.add_candidate(first.run.name, orphan)
    resumed = cuco.evolve(example_spec, run_dir=tmp_path, generations=1, population=1, workers=1)
    assert resumed.evaluated_now == 2
    got = {c.id: ev for c, ev in _evaluations(tmp_path, first.run.name)}
    assert got[child.id].status is ds.Status.REJECTED and "frozen_region_changed" in got[child.id].reason
    assert got[orphan.id].status is ds.Status.REJECTED and "parent_missing" in got[orphan.id].reason
    assert got[parent.id].status is ds.Status.OK

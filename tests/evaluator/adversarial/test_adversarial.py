"""Hostile candidates through the real cascade (``Evaluator.evaluate``: guard -> build -> emulate):
each is refused with its status, at its stage, with a recorded reason naming the attack, never
``ok``. The catalogue (catalogue.py, README.md) says which defence holds each one."""

import re
from pathlib import Path

import pytest

import design_space as ds
from design_space.evaluation import Status
from tests.evaluator.adversarial import honest_kernels as H
from tests.evaluator.adversarial.catalogue import CATALOGUE, Case

README = Path(__file__).with_name("README.md")


def evaluate(ev, built):
    source, parent = built if isinstance(built, tuple) else (built, None)
    cand = ds.Candidate(origin=ds.Origin(kind="manual", patch_type="adversarial"), source=source)
    return ev.evaluate(cand, parent_source=parent)


def _param(c: Case):
    marks = [pytest.mark.slow] if c.slow else []
    if c.hole:
        marks.append(pytest.mark.xfail(strict=True, reason=f"known hole: {c.hole}"))
    return pytest.param(c, id=c.name, marks=marks)


@pytest.mark.parametrize("workload", sorted(H.WORKLOADS))
def test_the_honest_kernel_every_hostile_one_is_made_from_passes(evaluators, workload):
    result = evaluate(evaluators(workload), H.honest(workload))
    assert result.status is Status.OK, result.reason + "\n" + result.logs


@pytest.mark.parametrize("case", [_param(c) for c in CATALOGUE])
def test_hostile_candidate_is_refused_with_its_status_and_reason(evaluators, case):
    result = evaluate(evaluators(case.workload, hang=case.hangs), case.build())
    assert result.status is not Status.OK, result.logs
    assert (result.status, result.stage if case.stage else None) == (case.status, case.stage), \
        f"{result.status.value} at {result.stage.value}: {result.reason}\n{result.logs[-3000:]}"
    missing = [words for words in case.reason if words not in result.reason]
    assert not missing, f"reason {result.reason!r} lacks {missing}"


def test_the_suite_attacks_every_class_in_three_workloads_or_more():
    assert len(CATALOGUE) >= 30
    assert len({c.workload for c in CATALOGUE}) >= 3
    classes = {c.attack for c in CATALOGUE}
    for attack in classes:  # each class is attacked in more than one way
        assert sum(c.attack == attack for c in CATALOGUE) >= 3, attack


def test_the_readme_table_lists_every_hostile_candidate_with_its_status():
    rows = {}
    for line in README.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = re.match(r"`([^`]+)`", cells[0]) if len(cells) >= 6 else None
        if name:
            rows[name.group(1)] = cells
    for c in CATALOGUE:
        assert c.name in rows, f"README.md has no row for {c.name}"
        assert f"`{c.status.value}`" in rows[c.name][3], (c.name, rows[c.name])

"""Hostile candidates through the real CPU cascade (guard -> build -> emulate): each is refused
with its status and a recorded reason, never OK. See README.md for which layer catches what."""

import pytest

import design_space as ds
from design_space.evaluation import Stage, Status
from tests.evaluator.adversarial import kernels as K


def evaluate(ev, source, *, point=K.POINT, parent=None):
    cand = ds.Candidate(origin=ds.Origin(kind="manual", patch_type="adversarial"), source=source, point=point)
    result = ev.evaluate(cand, parent_source=parent)
    assert result.status is not Status.OK, result.logs
    assert result.reason, "a refusal must say why"
    return result


def test_the_honest_render_passes(adv_evaluator):
    # the baseline every hostile kernel is an edit of
    cand = ds.Candidate(origin=ds.Origin(kind="template"), source=K.honest(), point=K.POINT)
    assert adv_evaluator.evaluate(cand).status is Status.OK


def test_output_left_unwritten_after_the_first_call_is_a_wrong_result(adv_evaluator):
    r = evaluate(adv_evaluator, K.stale_output())
    assert r.status is Status.WRONG_RESULT and "never written" in r.reason


def test_skipped_peer_contribution_is_a_wrong_result(adv_evaluator):
    r = evaluate(adv_evaluator, K.skipped_peer())
    assert r.status is Status.WRONG_RESULT and "rank 0 has" in r.reason


def test_result_computed_on_one_rank_and_copied_is_a_wrong_result_on_the_others(adv_evaluator):
    r = evaluate(adv_evaluator, K.one_rank_computes(), point=None)
    assert r.status is Status.WRONG_RESULT and "rank 1 has" in r.reason


def test_work_on_a_stream_cuco_run_never_joins_is_rejected(adv_evaluator):
    r = evaluate(adv_evaluator, K.unjoined_stream())
    assert r.status is Status.REJECTED and r.stage is Stage.EMULATE
    assert "never joined" in r.reason or "join every side stream" in r.reason


@pytest.mark.parametrize("kind", sorted(K.TIMING))
def test_timing_calls_and_clock_reads_are_rejected_by_the_guard(adv_evaluator, kind):
    r = evaluate(adv_evaluator, K.timing(kind))
    assert r.status is Status.REJECTED and r.stage is Stage.GUARD and "timing" in r.logs


def test_infinite_loop_times_out(hang_evaluator):
    r = evaluate(hang_evaluator, K.endless_loop())
    assert r.status is Status.TIMEOUT and "time limit" in r.reason


def test_segfault_is_a_crash_naming_the_rank(adv_evaluator):
    r = evaluate(adv_evaluator, K.segfault())
    assert r.status is Status.CRASHED and "SIGSEGV" in r.reason and "rank 1" in r.reason


@pytest.mark.parametrize("past, expected", [
    ("end", "0 bytes past the end of rank 1 output 0"),
    ("symm", "past the end of rank 1 symmetric buffer"),
    ("far", "past the end of rank 0 output 0, beyond its guard page"),
    ("before", "16 bytes before the start of rank 1 output 0"),
])
def test_out_of_bounds_write_is_a_crash_naming_the_buffer(adv_evaluator, past, expected):
    r = evaluate(adv_evaluator, K.out_of_bounds(past))
    assert r.status is Status.CRASHED and expected in r.reason, r.reason


@pytest.mark.parametrize("kind", ["one", "many"])
def test_huge_allocations_are_refused_past_the_budget(adv_evaluator, kind):
    r = evaluate(adv_evaluator, K.huge_allocation(kind))
    assert r.status is Status.CRASHED and "allows 268435456 bytes of allocations per rank" in r.reason


@pytest.mark.parametrize("source, reason", [
    (lambda: K.fork_bomb(), "fork: process control"),
    (lambda: K.network(9), "socket: network access"),
    (lambda: K.api_key("OPENAI_API_KEY"), "getenv: environment access"),
    (lambda: K.write_outside("/tmp/cuco-escaped.txt"), "fopen: file access"),
], ids=["fork_bomb", "network", "api_key", "write_outside"])
def test_escapes_are_rejected_by_the_guard(adv_evaluator, source, reason):
    r = evaluate(adv_evaluator, source())
    assert r.status is Status.REJECTED and r.stage is Stage.GUARD and reason in r.logs


def test_change_to_frozen_code_is_rejected(adv_evaluator):
    hostile, parent = K.frozen_change()
    r = evaluate(adv_evaluator, hostile, parent=parent)
    assert r.status is Status.REJECTED and "frozen_region_changed" in r.reason

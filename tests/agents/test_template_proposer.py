"""The template proposer: a real search over the declared design space, with no LLM."""

import random
import statistics

import pytest

import design_space as ds
from agents import ProposalRequest, TemplateProposer, conservative_point, create_proposer, proposer_names

PATTERN = ds.get_pattern("allgather_gemm")
H100 = ds.get_profile("H100")
SPACE = ds.valid_points(PATTERN, H100)


@pytest.fixture(scope="module")
def spec(example_spec):
    return example_spec


def _request(spec, generation=0, count=8, seed=0, history=(), known=frozenset()):
    return ProposalRequest(spec=spec, pattern=PATTERN, hardware=H100, generation=generation, count=count, seed=seed,
                           history=tuple(history), known_hashes=known)


def _evaluate(spec, cand):
    """Score with the analytic model, exactly as the evaluator's simulate stage does."""
    timings = []
    for shape in spec.shapes:
        est = ds.estimate(PATTERN.cost(shape.dims, 8, spec.dtype), cand.point, 8, H100, spec.dtype.value)
        timings.append(ds.Timing(shape=shape.name, world=8, source="simulated", seconds=est.simulated,
                                 bound_seconds=est.bound, baseline_seconds=est.baseline))
    return ds.Evaluation(candidate_id=cand.id, status="ok", stage="simulate", timings=tuple(timings))


def test_registry_holds_the_template_proposer():
    assert "template" in proposer_names()
    assert isinstance(create_proposer("template"), TemplateProposer)
    with pytest.raises(ds.ProposerError, match="unknown proposer"):
        create_proposer("nope")


def test_generation_zero_starts_conservative_and_spans_placements(spec):
    cands = TemplateProposer().propose(_request(spec))
    assert len(cands) == 8
    assert cands[0].point == conservative_point(SPACE)
    assert cands[0].point.key() == "lsa/sequential/global_barrier/cta/4096K/32"
    assert {c.point.placement for c in cands} == set(ds.Placement)
    assert all(ds.is_valid(c.point, PATTERN, H100) for c in cands)
    assert len({c.content_hash for c in cands}) == 8
    assert all(c.source == PATTERN.render(c.point) for c in cands)


def test_proposals_are_seeded_and_skip_known_hashes(spec):
    a = TemplateProposer().propose(_request(spec, seed=3))
    b = TemplateProposer().propose(_request(spec, seed=3))
    assert [c.point for c in a] == [c.point for c in b]
    known = frozenset(c.content_hash for c in a)
    c = TemplateProposer().propose(_request(spec, seed=3, known=known))
    assert len(c) == 8 and not known & {x.content_hash for x in c}


def test_offspring_descend_from_evaluated_parents(spec):
    gen0 = TemplateProposer().propose(_request(spec))
    history = [(c, _evaluate(spec, c)) for c in gen0]
    kids = TemplateProposer().propose(_request(spec, generation=1, history=history,
                                               known=frozenset(c.content_hash for c in gen0)))
    ids = {c.id for c in gen0}
    by_id = {c.id: c for c in gen0}
    assert kids and all(k.generation == 1 for k in kids)
    descended = [k for k in kids if k.parent_ids]
    assert descended and all(set(k.parent_ids) <= ids for k in descended)
    for k in descended:
        if k.origin.patch_type.startswith("mutate:"):
            dim = k.origin.patch_type.split(":")[1]
            parent = by_id[k.parent_ids[0]].point
            assert [d for d in ds.DIMENSIONS if getattr(parent, d) != getattr(k.point, d)] == [dim]


def test_restrictions_of_the_spec_are_respected(spec):
    narrow = spec.model_copy(update={"restrictions": {"placement": ("fused_persistent",), "issuer": ("warp",)}})
    cands = TemplateProposer().propose(_request(narrow, count=6))
    assert cands and all(c.point.placement is ds.Placement.FUSED_PERSISTENT and c.point.issuer is ds.Issuer.WARP
                         for c in cands)


def _evaluations_to_near_optimum(spec, propose, best, budget=200):
    history, seen = [], set()
    for gen in range(budget // 8):
        for c in propose(gen, history, frozenset(seen)):
            seen.add(c.content_hash)
            ev = _evaluate(spec, c)
            history.append((c, ev))
            if ev.fitness >= best / 1.05:
                return len(history)
    return budget


def test_search_reaches_the_optimum_faster_than_random_sampling(spec):
    fitness = {p: _evaluate(spec, ds.Candidate(origin=ds.Origin(kind="template"), source="", point=p)).fitness
               for p in SPACE}
    best = max(fitness.values())
    ours, rnd = [], []
    for seed in range(5):
        proposer = TemplateProposer()
        ours.append(_evaluations_to_near_optimum(
            spec, lambda g, h, k: proposer.propose(_request(spec, generation=g, seed=seed, history=h, known=k)), best))
        order = random.Random(seed).sample(SPACE, len(SPACE))
        rnd.append(next(i for i, p in enumerate(order, 1) if fitness[p] >= best / 1.05))
    assert statistics.median(ours) < statistics.median(rnd), (ours, rnd)

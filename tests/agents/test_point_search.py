"""The pieces of the model-guided search: prior, observations, correction."""

import math

import pytest

import design_space as ds
from design_space.code_features import TENSOR_CORE_TYPICAL
from agents import ProposalRequest, TemplateProposer
from agents.point_search import Correction, features, observe, prior_for

PATTERN = ds.get_pattern("allgather_gemm")
H100 = ds.get_profile("H100")


@pytest.fixture(scope="module")
def spec(example_spec):
    return example_spec


@pytest.fixture(scope="module")
def prior(spec):
    return prior_for(spec, PATTERN, H100)


def _cand(point):
    return ds.Candidate(origin=ds.Origin(kind="template"), source=point.key(), point=point)


def _ok(cand, fitness):
    """An ok evaluation whose fitness (baseline / time at one shape) is ``fitness``."""
    timing = ds.Timing(shape="s", world=8, source="simulated", seconds=1.0, bound_seconds=0.5,
                       baseline_seconds=fitness)
    return ds.Evaluation(candidate_id=cand.id, status="ok", stage="simulate", timings=(timing,))


def _failed(cand):
    return ds.Evaluation(candidate_id=cand.id, status="emulation_failed", stage="emulate", reason="deadlock")


def test_prior_is_the_log_of_the_evaluators_simulated_fitness(spec, prior):
    point = prior.points[17]
    speedups = []
    for shape in spec.shapes:
        est = ds.estimate(PATTERN.cost(shape.dims, 8, spec.dtype), point, 8, H100, spec.dtype.value,
                          features=TENSOR_CORE_TYPICAL)
        speedups.append(est.baseline / est.simulated)
    geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
    assert prior.log_fitness[17] == pytest.approx(math.log(geomean))
    assert prior.of(point) == prior.log_fitness[17]
    assert set(prior.points) == set(ds.valid_points(PATTERN, H100))


def test_prior_is_cached_per_space(spec, prior):
    assert prior_for(spec, PATTERN, H100) is prior
    narrow = spec.model_copy(update={"restrictions": {"backend": ("lsa",)}})
    other = prior_for(narrow, PATTERN, H100)
    assert other is not prior and {p.backend for p in other.points} == {ds.Backend.LSA}


def test_observations_separate_measured_failed_and_pending(prior):
    a, b, c = prior.points[:3]
    ca, cb, cc, cb2 = _cand(a), _cand(b), _cand(c), _cand(b)
    obs = observe([(ca, _ok(ca, 2.0)), (cb, _failed(cb)), (cb2, _ok(cb2, 1.0)), (cc, None)], prior)
    assert obs.tried == {a, b, c}
    assert set(obs.measured) == {a, b}
    assert obs.failed == set()  # b also succeeded in another rendering
    assert obs.residual[a] == pytest.approx(math.log(2.0) - prior.of(a))
    assert [p for p, _, _ in obs.best(5)] == [a, b]


def test_an_exact_model_needs_no_correction(prior):
    history = []
    for p in prior.points[::50]:
        cand = _cand(p)
        history.append((cand, _ok(cand, math.exp(prior.of(p)))))
    corr = Correction(observe(history, prior))
    assert corr.spread == pytest.approx(0.0, abs=1e-12)
    assert all(corr.value(f) == pytest.approx(0.0, abs=1e-9) for f in prior.feats[::97])
    assert all(corr.uncertainty(f) == pytest.approx(0.0, abs=1e-9) for f in prior.feats[::97])


def test_a_value_the_model_underrates_is_corrected_upwards(prior):
    history = []
    for p in prior.points[::7]:
        cand = _cand(p)
        boost = 0.5 if p.issuer is ds.Issuer.THREAD else 0.0
        history.append((cand, _ok(cand, math.exp(prior.of(p) + boost))))
    corr = Correction(observe(history, prior))
    thread = next(f for f in prior.feats if ("issuer", ds.Issuer.THREAD) in f)
    warp = tuple(("issuer", ds.Issuer.WARP) if d == "issuer" else (d, v) for d, v in thread)
    assert corr.value(thread) - corr.value(warp) == pytest.approx(0.5, abs=0.1)
    assert corr.spread > 0.1


def test_a_value_that_keeps_failing_is_penalised_and_a_shared_one_is_not(prior):
    history = []
    for p in prior.points[::11]:
        cand = _cand(p)
        history.append((cand, _failed(cand) if p.chunk_bytes == 4096 else _ok(cand, math.exp(prior.of(p)))))
    corr = Correction(observe(history, prior))
    assert corr.penalty[("chunk_bytes", 4096)] > 0.5
    assert ("chunk_bytes", 1 << 20) not in corr.penalty
    small = next(p for p in prior.points if p.chunk_bytes == 4096)
    big = small.model_copy(update={"chunk_bytes": 1 << 20})
    assert corr.value(features(small)) < corr.value(features(big)) - 0.5


def test_exploitation_steers_away_from_a_failing_value(spec, prior):
    """Every tried point with issuer=warp failed (say, a template bug): the next generation's
    model-ranked picks avoid warp although the model likes it."""
    gen0 = TemplateProposer().propose(ProposalRequest(spec=spec, pattern=PATTERN, hardware=H100, generation=0,
                                                      count=16, seed=0))
    assert any(c.point.issuer is ds.Issuer.WARP for c in gen0)
    history = [(c, _failed(c) if c.point.issuer is ds.Issuer.WARP else _ok(c, math.exp(prior.of(c.point))))
               for c in gen0]
    gen1 = TemplateProposer().propose(ProposalRequest(
        spec=spec, pattern=PATTERN, hardware=H100, generation=1, count=8, seed=0, history=tuple(history),
        known_hashes=frozenset(c.content_hash for c in gen0)))
    picks = [c for c in gen1 if c.origin.patch_type == "surrogate"]
    assert picks and not any(c.point.issuer is ds.Issuer.WARP for c in picks)

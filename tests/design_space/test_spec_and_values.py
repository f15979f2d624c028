"""KernelSpec, Candidate and Evaluation values."""

import pytest
from pydantic import ValidationError

import design_space as ds


def _spec(**kw):
    base = dict(name="t", pattern="allgather_gemm", shapes=[ds.ShapeCase(name="a", dims={"m": 8, "n": 8, "k": 8})],
                emulation_shapes=[ds.ShapeCase(name="e", dims={"m": 8, "n": 8, "k": 8})],
                reference="ref:reference", inputs="ref:make_inputs")
    return ds.KernelSpec(**{**base, **kw})


def test_spec_defaults_and_headline():
    s = _spec()
    assert s.dtype is ds.DType.BF16 and s.headline.name == "a" and s.target_world == 8


@pytest.mark.parametrize("kw", [{"reference": "no_colon"}, {"world_sizes": ()}, {"primary_shape": "zz"},
                                {"shapes": []}, {"extra_field": 1}])
def test_malformed_specs_are_refused(kw):
    with pytest.raises(ValidationError):
        _spec(**kw)


def test_values_are_frozen():
    with pytest.raises(ValidationError):
        _spec().name = "x"  # type: ignore[misc]


def test_candidate_hash_ignores_whitespace_only():
    a = ds.Candidate(origin=ds.Origin(kind="template"), source="int  x;\n")
    b = ds.Candidate(origin=ds.Origin(kind="template"), source="int x; ")
    c = ds.Candidate(origin=ds.Origin(kind="template"), source="int y;")
    assert a.content_hash == b.content_hash != c.content_hash
    assert a.id != b.id


def test_evaluation_aggregates_and_refuses_mixed_timing_sources():
    t1 = ds.Timing(shape="a", world=8, source="simulated", seconds=2.0, bound_seconds=1.0, baseline_seconds=4.0)
    t2 = ds.Timing(shape="b", world=8, source="simulated", seconds=1.0, bound_seconds=0.5, baseline_seconds=1.0)
    ev = ds.Evaluation(candidate_id="x", status="ok", stage="simulate", timings=(t1, t2))
    assert ev.speedup == pytest.approx((2.0 * 1.0) ** 0.5)
    assert ev.fitness == ev.speedup and ev.timing_source is ds.TimingSource.SIMULATED
    mixed = ds.Evaluation(candidate_id="x", status="ok", stage="bench",
                          timings=(t1, t2.model_copy(update={"source": ds.TimingSource.MEASURED})))
    with pytest.raises(ValueError, match="mixes"):
        mixed.timing_source
    failed = ds.Evaluation(candidate_id="x", status="wrong_result", stage="emulate", timings=(t1,))
    assert failed.fitness is None


def test_checked_worlds_requires_every_rank():
    ok = dict(tier="emulated", shape="e", ok=True)
    checks = (ds.RankCheck(world=2, rank=0, **ok), ds.RankCheck(world=2, rank=1, **ok),
              ds.RankCheck(world=4, rank=0, **ok), ds.RankCheck(world=4, rank=1, **{**ok, "ok": False}))
    ev = ds.Evaluation(candidate_id="x", status="wrong_result", stage="emulate", checks=checks)
    assert ev.checked_worlds() == (2,)


def test_trim_log_keeps_head_and_tail():
    text = "HEAD" + "x" * 10000 + "TAIL"
    out = ds.trim_log(text, 200)
    assert out.startswith("HEAD") and out.endswith("TAIL") and len(out) < 300

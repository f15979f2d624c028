"""One definition per figure: per-shape speedup and SOL, the ranking score, the headline."""

import math

import pytest

from design_space.evaluation import Timing, TimingSource
from design_space.figures import geomean, headline, score, shape_figures, sol_fraction, speedup

SIM = TimingSource.SIMULATED


def _t(shape, seconds, baseline, bound, source=SIM):
    return Timing(shape=shape, world=8, source=source, seconds=seconds, bound_seconds=bound, baseline_seconds=baseline)


def test_per_shape_speedup_and_sol_are_baseline_and_bound_over_time():
    t = _t("a", 2.0, baseline=3.0, bound=1.0)
    assert speedup(t) == 1.5 and sol_fraction(t) == 0.5
    assert shape_figures(t).speedup == 1.5
    assert speedup(_t("a", 0.0, 3.0, 1.0)) is None and sol_fraction(_t("a", 0.0, 3.0, 1.0)) is None


def test_the_score_is_the_geometric_mean_over_shapes():
    timings = [_t("decode", 1.0, baseline=2.0, bound=0.5), _t("prefill", 4.0, baseline=2.0, bound=2.0)]
    s = score(timings, expected=("decode", "prefill"), headline_shape="prefill")
    assert s.speedup == pytest.approx(1.0)  # a 2x win and a 2x loss cancel
    assert s.sol == pytest.approx(0.5)
    assert s.headline.shape == "prefill" and s.headline.speedup == 0.5
    assert s.source is SIM


def test_a_missing_or_broken_shape_leaves_no_score():
    one = [_t("decode", 1.0, baseline=2.0, bound=0.5)]
    assert score(one, expected=("decode", "prefill")).speedup is None
    assert score(one, expected=("decode", "prefill")).missing == ("prefill",)
    assert score([*one, _t("prefill", 0.0, 2.0, 1.0)]).speedup is None
    assert score(one).speedup == 2.0  # without expectations, the shapes given


def test_measured_and_simulated_are_never_scored_together():
    with pytest.raises(ValueError, match="measured and simulated"):
        score([_t("a", 1.0, 1.0, 1.0), _t("b", 1.0, 1.0, 1.0, TimingSource.MEASURED)])


def test_geomean_and_headline_edges():
    assert geomean([]) is None and geomean([1.0, None]) is None and geomean([1.0, -1.0]) is None
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert headline([_t("a", 1.0, 1.0, 1.0)], "b") is None
    assert math.isclose(headline([_t("a", 1.0, 3.0, 1.0)], "a").speedup, 3.0)

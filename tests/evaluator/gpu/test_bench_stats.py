"""The bench arithmetic with numbers: max over ranks, median and spread, rotation, SOL flags."""

import pytest

from evaluator.gpu import bench_stats as bs


def test_an_iteration_takes_as_long_as_its_slowest_rank():
    assert bs.max_over_ranks([[1.0, 5.0, 2.0], [3.0, 1.0, 2.5]]) == [3.0, 5.0, 2.5]


def test_ranks_must_report_the_same_iterations():
    with pytest.raises(ValueError, match="same number of iterations"):
        bs.max_over_ranks([[1.0, 2.0], [1.0]])


def test_summary_is_the_median_with_p10_p90_and_iqr():
    s = bs.summarize([float(x) for x in range(1, 12)])  # 1..11
    assert (s.median, s.p10, s.p90, s.iqr, s.n) == (6.0, 2.0, 10.0, 5.0, 11)
    assert s.spread == pytest.approx(8.0 / 6.0)


def test_quantiles_interpolate_like_numpy():
    assert bs.quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert bs.quantile([10.0], 0.9) == 10.0


def test_inputs_rotate_until_they_span_twice_the_l2():
    mb = 1 << 20
    assert bs.input_sets(10 * mb, 50 * mb, memory_budget_bytes=10_000 * mb) == 10
    assert bs.input_sets(60 * mb, 50 * mb, memory_budget_bytes=10_000 * mb) == 1  # already bigger than L2
    assert bs.input_sets(1 * mb, 50 * mb, memory_budget_bytes=10_000 * mb) == bs.MAX_INPUT_SETS
    assert bs.input_sets(10 * mb, 50 * mb, memory_budget_bytes=30 * mb) == 3  # memory caps it


def test_sol_above_the_threshold_is_flagged_and_noise_is_reported():
    quiet = bs.summarize([1.0, 1.0, 1.01, 1.0])
    assert bs.sol_fraction(0.9, 1.0) == pytest.approx(0.9)
    assert bs.bench_flags(0.9, quiet) == []
    assert bs.bench_flags(1.2, quiet)[0].startswith("beats_physical_bound")
    assert bs.bench_flags(1.05, quiet) == []  # at the threshold: not flagged
    noisy = bs.summarize([1.0, 2.0, 1.0, 2.0, 1.0])
    assert any(f.startswith("noisy_timing") for f in bs.bench_flags(0.5, noisy))
    assert bs.speedup(2.0, 1.0) == 2.0 and bs.speedup(2.0, 0.0) == 0.0

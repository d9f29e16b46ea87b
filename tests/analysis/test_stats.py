"""Seeded bootstrap intervals: reproducible, and right where the answer is known."""

from __future__ import annotations

import math

import pytest

from ragtrack.analysis.stats import bootstrap_mean_ci, bootstrap_ratio_ci

SCORES = [0.0, 10.0, 55.5, 60.0, 72.25, 80.0, 91.0, 99.5, 100.0, 33.3]


def test_same_seed_gives_the_same_interval():
    assert bootstrap_mean_ci(SCORES, seed=7, n_resamples=2000) == bootstrap_mean_ci(
        SCORES, seed=7, n_resamples=2000
    )


def test_another_seed_gives_another_interval():
    assert bootstrap_mean_ci(SCORES, seed=1, n_resamples=2000) != bootstrap_mean_ci(
        SCORES, seed=2, n_resamples=2000
    )


def test_estimate_is_the_exact_mean_and_lies_inside():
    ci = bootstrap_mean_ci(SCORES, n_resamples=2000)
    assert ci.estimate == math.fsum(SCORES) / len(SCORES) and ci.low < ci.estimate < ci.high


def test_interval_narrows_with_more_cases():
    wide = bootstrap_mean_ci(SCORES, n_resamples=2000)
    narrow = bootstrap_mean_ci(SCORES * 25, n_resamples=2000)
    assert narrow.high - narrow.low < (wide.high - wide.low) / 3


def test_constant_values_give_a_point_interval():
    ci = bootstrap_mean_ci([1.0] * 30, n_resamples=500)
    assert (ci.low, ci.estimate, ci.high) == (1.0, 1.0, 1.0)


def test_missing_values_are_left_out():
    ci = bootstrap_mean_ci([None, 2.0, math.nan, 4.0], n_resamples=500)
    assert (ci.n, ci.estimate) == (2, 3.0) and 2.0 <= ci.low <= ci.high <= 4.0


def test_no_values_give_nan_bounds():
    ci = bootstrap_mean_ci([None, math.nan])
    assert ci.n == 0 and math.isnan(ci.estimate) and math.isnan(ci.low) and math.isnan(ci.high)


def test_ratio_ignores_cases_outside_the_denominator():
    ci = bootstrap_ratio_ci([1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], n_resamples=500)
    assert (ci.estimate, ci.n) == (0.5, 2) and 0.0 <= ci.low <= ci.high <= 1.0


def test_bad_confidence_is_refused():
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean_ci(SCORES, confidence=95)

"""Bootstrap confidence intervals, seeded: the same values, seed and resample count give the same interval.

Pure functions over plain sequences (numpy only), so that the sweep summary and
`ragtrack compare` use the same resampling. A resample draws `n` cases with replacement;
the interval is the percentile interval of the resampled statistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_RESAMPLES", "Interval", "bootstrap_mean_ci", "bootstrap_ratio_ci"]

DEFAULT_RESAMPLES = 10_000
_CELLS_PER_CHUNK = 4_000_000  # resample indices drawn at once (32 MB of int64): memory stays flat for any n


class Interval(BaseModel):
    """A point estimate with its bootstrap interval; NaN bounds when there is nothing to resample."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    low: float
    high: float
    n: int  # cases that entered the statistic
    confidence: float
    seed: int
    n_resamples: int

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def bootstrap_ratio_ci(
    num: Sequence[float],
    den: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> Interval:
    """Interval of `Σ num / Σ den` over cases resampled with replacement (a mean: every `den` is 1).

    Cases with `den` 0 stay in the resampling (they are part of the population) but add
    nothing to either sum; a resample whose `Σ den` is 0 is left out of the percentiles.
    `estimate` is the statistic on the cases as given (`math.fsum`, like the logged metrics).
    """
    if len(num) != len(den):
        raise ValueError(f"num and den differ in length ({len(num)} != {len(den)})")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    x = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    total = math.fsum(d)
    estimate = math.fsum(x) / total if total else math.nan
    counted = int(np.count_nonzero(d))

    def interval(low: float, high: float) -> Interval:
        return Interval(estimate=estimate, low=low, high=high, n=counted, confidence=confidence, seed=seed, n_resamples=n_resamples)

    if counted == 0:
        return interval(math.nan, math.nan)
    n = len(x)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CELLS_PER_CHUNK // n)
    stats = []
    for start in range(0, n_resamples, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_resamples - start), n))
        sums_d = d[idx].sum(axis=1)
        keep = sums_d != 0
        stats.append(x[idx].sum(axis=1)[keep] / sums_d[keep])
    values = np.concatenate(stats)
    if values.size == 0:
        return interval(math.nan, math.nan)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return interval(float(low), float(high))


def bootstrap_mean_ci(
    values: Sequence[float | None],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> Interval:
    """Interval of the mean of `values`; None and NaN (not computed for that case) are left out."""
    kept = [float(v) for v in values if v is not None and not math.isnan(v)]
    return bootstrap_ratio_ci(kept, [1.0] * len(kept), seed=seed, n_resamples=n_resamples, confidence=confidence)

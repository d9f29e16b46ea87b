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

from ragtrack.scorers.base import CaseTerms

__all__ = ["DEFAULT_RESAMPLES", "Interval", "bootstrap_mean_ci", "bootstrap_ratio_ci", "paired_bootstrap"]

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
        return Interval(
            estimate=estimate,
            low=low,
            high=high,
            n=counted,
            confidence=confidence,
            seed=seed,
            n_resamples=n_resamples,
        )

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
    return bootstrap_ratio_ci(
        kept, [1.0] * len(kept), seed=seed, n_resamples=n_resamples, confidence=confidence
    )


def _ratio(num: np.ndarray, den: np.ndarray, empty: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), empty)


def paired_bootstrap(
    terms_a: Sequence[CaseTerms],
    terms_b: Sequence[CaseTerms],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[tuple[float, float]]:
    """The percentile interval of `B − A` for each metric (`terms_a[i]` against `terms_b[i]`, over the same
    cases in the same order), from one seeded set of case resamples: each case is compared with itself."""
    if not terms_a:
        return []
    num_a, den_a = (np.array([getattr(t, k) for t in terms_a], dtype=float).T for k in ("num", "den"))
    num_b, den_b = (np.array([getattr(t, k) for t in terms_b], dtype=float).T for k in ("num", "den"))
    empty_a = np.array([t.empty for t in terms_a])
    empty_b = np.array([t.empty for t in terms_b])
    n = num_a.shape[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))  # bound the weight matrix to ~16 MB
    parts = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        draws = (
            rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        )  # resample r draws n cases
        w = (
            np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(float)
        )  # times each case was drawn
        parts.append(_ratio(w @ num_b, w @ den_b, empty_b) - _ratio(w @ num_a, w @ den_a, empty_a))
    diffs = np.vstack(parts)
    tail = 100 * (1 - confidence) / 2
    out = []
    for col in diffs.T:
        col = col[~np.isnan(col)]
        if col.size == 0:
            out.append((math.nan, math.nan))
        else:
            lo, hi = np.percentile(col, [tail, 100 - tail])
            out.append((float(lo), float(hi)))
    return out

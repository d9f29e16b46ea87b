"""Two runs compared case by case, with honest statistics. Pure: two per-case tables in, a `Comparison` out.

For every metric a scorer declares as per-case terms (`Scorer.case_terms`: `Σ num / Σ den`,
its direction, whether each case is a pass/fail flag), over the cases both runs scored:

- both means, and their difference `B − A`;
- a **paired bootstrap** confidence interval of the difference: the shared cases are
  resampled with replacement (the same resample for both runs, so each case is compared
  with itself), the metric is recomputed as a ratio of sums on each side, and the interval
  is the percentiles of the `B − A` values. Seeded (`numpy.random.default_rng(seed)`), so
  the same two tables give the same interval; one resample serves every metric;
- **McNemar's exact test** for pass/fail metrics: over the cases counted on both sides,
  the cases that passed in A and failed in B against the reverse, a two-sided exact
  binomial test of the discordant pairs (p = 1 when there are none);
- the cases that moved most (largest change; at equal size, regressions first), with
  both answers side by side.

A difference is *significant* when the whole interval lies on one side of 0 and, for a
pass/fail metric, McNemar's p is below `1 − confidence` too (the percentile bootstrap is
optimistic when only a few cases flip: 4 of 44 all one way give an interval clear of 0
but p = 0.125). B *regresses* on a metric by more than a margin when, in the same way,
the whole interval lies beyond that margin in the metric's bad direction (below
`−margin` for a higher-is-better metric, above `+margin` for a lower-is-better one). Runs
scored on different eval-set versions are refused unless asked for, and then only their
shared cases are compared. A scorer's metrics are compared only when both runs scored them
alike: a scorer at another version, with another scoring setting or other model weights in
B (its `scorer/<name>/…` params) is named instead of a difference that would be partly the
scorer's, unless asked for (`allow_different_scorers`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, computed_field

from ragtrack.analysis.stats import paired_bootstrap
from ragtrack.core.errors import InputError
from ragtrack.scorers.base import CaseTerms, get_scorer_class
from ragtrack.scorers.reliability import NOT_COMPARED

__all__ = [
    "CaseMove",
    "Comparison",
    "LoggedDiff",
    "McNemar",
    "MetricDiff",
    "NO_TERMS",
    "RunRef",
    "RunSide",
    "compare",
    "parse_regression_gate",
]

Verdict = Literal["better", "worse", "no significant difference", "not computed"]


class RunRef(BaseModel):
    """Which run a side of a comparison is."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_name: str
    label: str  # adapter · prompt
    eval_set_version: str


class RunSide(BaseModel):
    """One run as compare reads it: its identity, the scorers that ran, its logged params and metrics,
    its per-case table."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    ref: RunRef
    scorers: list[str]
    params: dict[str, str]
    metrics: dict[str, float]
    cases: pd.DataFrame  # cases.parquet: `id`, `question`, `answer`, then `<scorer>/<column>`


class CaseMove(BaseModel):
    """One case whose value of a metric changed from A to B, with both answers."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    question: str
    value_a: float
    value_b: float
    delta: float  # value_b - value_a
    regression: bool  # moved in the metric's bad direction
    answer_a: str
    answer_b: str


class McNemar(BaseModel):
    """McNemar's exact test on the pass/fail flags of the cases counted in both runs."""

    model_config = ConfigDict(frozen=True)

    n_pairs: int
    pass_to_fail: int  # passed in A, failed in B
    fail_to_pass: int
    p_value: float


class MetricDiff(BaseModel):
    """One metric in both runs: means, paired bootstrap interval of `B − A`, McNemar, the cases that moved."""

    model_config = ConfigDict(frozen=True)

    metric: str
    higher_is_better: bool
    binary: bool
    n_cases: int  # shared cases counted by the metric in at least one run
    mean_a: float
    mean_b: float
    diff: float  # mean_b - mean_a
    ci_low: float
    ci_high: float
    mcnemar: McNemar | None  # pass/fail metrics only
    alpha: float  # 1 − confidence: McNemar's p must be below it for a pass/fail metric's difference to count
    n_worse: int  # cases counted in both runs that moved in the bad direction
    n_better: int
    moved: list[CaseMove]

    def _tested(self) -> bool:
        """McNemar agrees (pass/fail metrics): the percentile bootstrap is optimistic when few cases flip."""
        return self.mcnemar is None or self.mcnemar.p_value < self.alpha

    def regressed(self, margin: float = 0.0) -> bool:
        """The whole interval lies beyond `margin` in the bad direction (and, for pass/fail, McNemar
        agrees)."""
        beyond = self.ci_high < -margin if self.higher_is_better else self.ci_low > margin
        return beyond and self._tested()

    def improved(self) -> bool:
        beyond = self.ci_low > 0 if self.higher_is_better else self.ci_high < 0
        return beyond and self._tested()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> Verdict:
        if math.isnan(self.ci_low) or math.isnan(self.ci_high):
            return "not computed"
        return "worse" if self.regressed() else "better" if self.improved() else "no significant difference"


class LoggedDiff(BaseModel):
    """A logged value (param, or a metric without per-case terms) that differs between the runs;
    None: not logged."""

    model_config = ConfigDict(frozen=True)

    name: str
    a: str | float | None
    b: str | float | None


class Comparison(BaseModel):
    """Run B against run A, metric by metric and case by case."""

    model_config = ConfigDict(frozen=True)

    run_a: RunRef
    run_b: RunRef
    same_eval_set: bool
    n_shared: int
    n_only_a: int
    n_only_b: int
    confidence: float
    n_resamples: int
    seed: int
    metrics: list[MetricDiff]
    not_compared: list[str]  # metrics or scorers left out, and why
    run_level: list[LoggedDiff]  # logged metrics without per-case terms that differ (gates, counts)
    stamps: list[LoggedDiff]  # params that differ: what changed between the runs
    notes: list[str]

    def metric(self, name: str) -> MetricDiff:
        for m in self.metrics:
            if m.metric == name:
                return m
        for why in self.not_compared:
            if why.startswith(f"{name}: "):
                raise InputError("--fail-on-regression", f"{why}: not compared")
        known = ", ".join(m.metric for m in self.metrics)
        raise InputError(
            "--fail-on-regression", f"no metric {name!r} compared case by case; compared: {known}"
        )


def parse_regression_gate(text: str) -> tuple[str, float]:
    """`METRIC[:MARGIN]` (margin in the metric's units, ≥ 0; default 0)."""
    metric, _, margin = text.rpartition(":") if ":" in text else (text, "", "0")
    try:
        value = float(margin)
    except ValueError:
        raise InputError(
            "--fail-on-regression", f"margin {margin!r} is not a number (METRIC[:MARGIN])", field=text
        ) from None
    if not metric or not math.isfinite(value) or value < 0:
        raise InputError("--fail-on-regression", "expected METRIC[:MARGIN] with a margin ≥ 0", field=text)
    return metric, value


# ------------------------------------------------------------------ the comparison


def compare(
    a: RunSide,
    b: RunSide,
    *,
    allow_different_eval_sets: bool = False,
    allow_different_scorers: bool = False,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    top: int = 5,
) -> Comparison:
    """Run B against run A over the cases both scored (see the module docstring)."""
    same = a.ref.eval_set_version == b.ref.eval_set_version
    notes: list[str] = []
    if not same and not allow_different_eval_sets:
        raise InputError(
            "compare",
            f"runs {a.ref.run_id} and {b.ref.run_id} were scored on different eval sets "
            f"({a.ref.eval_set_version} vs {b.ref.eval_set_version}); "
            "--allow-different-eval-sets compares the cases they share, and only those",
        )
    ids_a, ids_b = _ids(a), _ids(b)
    in_b = set(ids_b)
    shared = [i for i in ids_a if i in in_b]
    if not shared:
        raise InputError("compare", f"runs {a.ref.run_id} and {b.ref.run_id} share no case id")
    if not same:
        notes.append(
            f"different eval sets: only the {len(shared)} shared cases are compared "
            f"({len(ids_a) - len(shared)} only in A, {len(ids_b) - len(shared)} only in B)"
        )
    fa, fb = _aligned(a, shared), _aligned(b, shared)
    terms_a, terms_b, not_compared = _terms(a, b, fa, fb)
    otherwise = _scored_otherwise(a.params, b.params, [t.metric for t in terms_a])
    if allow_different_scorers:
        notes += [f"scored otherwise, compared anyway: {m}: {why}" for m, why in otherwise.items()]
    elif otherwise:
        not_compared += [f"{m}: {why}" for m, why in otherwise.items()]
        kept = [i for i, t in enumerate(terms_a) if t.metric not in otherwise]
        terms_a, terms_b = [terms_a[i] for i in kept], [terms_b[i] for i in kept]
    diffs = paired_bootstrap(terms_a, terms_b, n_resamples=n_resamples, seed=seed, confidence=confidence)
    metrics = [
        _metric_diff(ta, tb, ci, fa, fb, top, 1 - confidence)
        for ta, tb, ci in zip(terms_a, terms_b, diffs, strict=True)
    ]
    covered = {t.metric for t in terms_a} | otherwise.keys()
    not_compared += sorted(
        f"{k}: {NO_TERMS}"
        for k in set(a.metrics) & set(b.metrics)
        if k.split("/")[0] in set(a.scorers) & set(b.scorers) and k not in covered
    )
    return Comparison(
        run_a=a.ref,
        run_b=b.ref,
        same_eval_set=same,
        n_shared=len(shared),
        n_only_a=len(ids_a) - len(shared),
        n_only_b=len(ids_b) - len(shared),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        metrics=metrics,
        not_compared=not_compared,
        run_level=_differing(
            {k: v for k, v in a.metrics.items() if k not in covered and not k.startswith("timing/")},
            {k: v for k, v in b.metrics.items() if k not in covered and not k.startswith("timing/")},
        ),
        stamps=_differing(a.params, b.params),
        notes=notes,
    )


NO_TERMS = "no per-case terms (a count or run-level value)"  # why a logged metric is not compared by cases
# a scorer's logged params (or an LLM block's, `llm.<key>`) that say how it ran or where from, not what it
# scores: code is compared by the version that promises the same scores, prompts by their sha256, an LLM judge
# by its model and decoding settings
_NOT_SCORING = NOT_COMPARED - {"model", "reranker_model"} | {
    "code_sha256",
    "reliability_sha256",
    "base_url",
    "api_key_env",
    "concurrency",
    "timeout_s",
    "deadline_s",
    "max_retries",
    "backoff_s",
    "cache_dir",
    "prompt_dir",
    "prompt_path",
    "max_failure_rate",
    "max_parse_failure_rate",
}
# a model's name, not compared when both runs logged its weights' sha256 (a local copy of a hub model is it)
_NAMED_BY = {
    "model": "embedding_model_sha256",
    "embedding_model": "embedding_model_sha256",
    "nli_model": "nli_model_sha256",
    "reranker_model": "reranker_model_sha256",
}


def _scored_otherwise(a: dict[str, str], b: dict[str, str], metrics: Sequence[str]) -> dict[str, str]:
    """Why each of `metrics` (`<scorer>/<metric>`) was scored otherwise in runs A and B: its scorer's
    (`_scorer_differs`)."""
    why = {name: _scorer_differs(a, b, name) for name in {m.partition("/")[0] for m in metrics}}
    return {m: reason for m in metrics if (reason := why[m.partition("/")[0]])}


def _scorer_differs(a: dict[str, str], b: dict[str, str], name: str) -> str:
    """How scorer `name` scored otherwise in runs A and B, by their `scorer/<name>/…` params: another version,
    or another setting or model weights; a param only one run logged is not held against them. "" when
    alike."""
    prefix = f"scorer/{name}/"
    pa = {k.removeprefix(prefix): v for k, v in a.items() if k.startswith(prefix)}
    pb = {k.removeprefix(prefix): v for k, v in b.items() if k.startswith(prefix)}
    if "version" in pa and "version" in pb and pa["version"] != pb["version"]:
        return (
            f"scored by {name} v{pa['version']} in A and v{pb['version']} in B "
            "(`ragtrack rescore` scores a run's answers again with the installed version)"
        )
    weighed = {k for k, sha in _NAMED_BY.items() if sha in pa and sha in pb}
    differ = sorted(
        k
        for k in pa.keys() & pb.keys() - weighed
        if k.rpartition(".")[2] not in _NOT_SCORING and pa[k] != pb[k]
    )
    return f"{name} scored it with other settings in A and B: {', '.join(differ)}" if differ else ""


def _ids(side: RunSide) -> list[str]:
    if "id" not in side.cases.columns:
        raise InputError(
            f"run {side.ref.run_id}: cases.parquet", "no `id` column: not a ragtrack per-case table"
        )
    return [str(x) for x in side.cases["id"].tolist()]


def _aligned(side: RunSide, ids: Sequence[str]) -> dict[str, list]:
    """The side's per-case columns, rows in the order of `ids`."""
    frame = side.cases.assign(id=side.cases["id"].astype(str)).set_index("id").loc[list(ids)]
    out = {c: frame[c].tolist() for c in frame.columns}
    out["id"] = list(ids)
    return out


def _terms(
    a: RunSide, b: RunSide, fa: dict[str, list], fb: dict[str, list]
) -> tuple[list[CaseTerms], list[CaseTerms], list[str]]:
    """Terms of every metric both runs can give, in scorer order; what was left out and why."""
    out_a: list[CaseTerms] = []
    out_b: list[CaseTerms] = []
    skipped: list[str] = []
    for name in a.scorers:
        if name not in b.scorers:
            skipped.append(f"scorer {name}: ran only in A")
            continue
        try:
            cls = get_scorer_class(name)
            ta, tb = cls.case_terms(fa), cls.case_terms(fb)
        except InputError:
            skipped.append(f"scorer {name}: not installed here")
            continue
        except KeyError as e:
            skipped.append(f"scorer {name}: per-case column {e.args[0]} missing from a run's cases.parquet")
            continue
        out_a += ta
        out_b += tb
    skipped += [f"scorer {name}: ran only in B" for name in b.scorers if name not in a.scorers]
    return out_a, out_b, skipped


def _values(t: CaseTerms) -> tuple[np.ndarray, np.ndarray]:
    """Each case's value of the metric (`num / den`) and whether the case counts (`den > 0`)."""
    num, den = np.asarray(t.num, dtype=float), np.asarray(t.den, dtype=float)
    counted = den > 0
    return np.divide(num, den, out=np.zeros_like(num), where=counted), counted


def _mcnemar(va: np.ndarray, vb: np.ndarray, both: np.ndarray, higher_is_better: bool) -> McNemar:
    from scipy.stats import binomtest

    down = int(np.sum(both & (va == 1.0) & (vb == 0.0)))
    up = int(np.sum(both & (va == 0.0) & (vb == 1.0)))
    p = binomtest(min(down, up), down + up, 0.5).pvalue if down + up else 1.0
    if (
        not higher_is_better
    ):  # a flag of a lower-is-better rate (a refusal, a hallucination) fails the case when set
        down, up = up, down
    return McNemar(n_pairs=int(both.sum()), pass_to_fail=down, fail_to_pass=up, p_value=float(p))


def _metric_diff(
    ta: CaseTerms,
    tb: CaseTerms,
    ci: tuple[float, float],
    fa: dict[str, list],
    fb: dict[str, list],
    top: int,
    alpha: float,
) -> MetricDiff:
    (va, ca), (vb, cb) = _values(ta), _values(tb)
    both = ca & cb
    delta = vb - va
    regression = (delta if ta.higher_is_better else -delta) < 0
    moved = np.flatnonzero(both & (delta != 0))
    ids = np.asarray(fa["id"], dtype=object)
    # the biggest changes first; at equal size regressions first, then by case id
    order = moved[np.lexsort((ids[moved].astype(str), ~regression[moved], -np.abs(delta[moved])))][:top]
    binary = ta.binary and tb.binary
    return MetricDiff(
        metric=ta.metric,
        higher_is_better=ta.higher_is_better,
        binary=binary,
        n_cases=int(np.sum(ca | cb)),
        mean_a=ta.value,
        mean_b=tb.value,
        diff=tb.value - ta.value,
        ci_low=ci[0],
        ci_high=ci[1],
        mcnemar=_mcnemar(va, vb, both, ta.higher_is_better) if binary else None,
        alpha=alpha,
        n_worse=int(np.sum(regression[moved])),
        n_better=int(np.sum(~regression[moved])),
        moved=[
            CaseMove(
                case_id=str(ids[i]),
                question=_text(fa.get("question"), i),
                value_a=float(va[i]),
                value_b=float(vb[i]),
                delta=float(delta[i]),
                regression=bool(regression[i]),
                answer_a=_text(fa.get("answer"), i),
                answer_b=_text(fb.get("answer"), i),
            )
            for i in order
        ],
    )


def _text(column: list | None, i: int) -> str:
    if column is None:
        return ""
    v = column[i]
    return v if isinstance(v, str) else ""


def _differing(a: dict, b: dict) -> list[LoggedDiff]:
    def same(x: object, y: object) -> bool:
        return x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))

    return [
        LoggedDiff(name=k, a=a.get(k), b=b.get(k))
        for k in sorted(set(a) | set(b))
        if not same(a.get(k), b.get(k))
    ]

"""A sweep at a glance: one row per job with its headline metric and a 95% bootstrap interval, who won, a
chart.

Pure: the tracking layer (`ragtrack.tracking.sweep_summary`) gathers each job's run,
metrics and per-case values and logs what this module renders (`sweep_summary.parquet`,
`sweep_summary.md`, `sweep_summary.png`) into the sweep's parent run.

The headline metric is `tracking.headline_metric`; when unset, `eval_json_v2/eval_score_avg`
if a job logged it, else the overall figure a configured scorer declares (`Scorer.headline`:
earag's `overall`, rag's `faithfulness`, …) of the first scorer that has one, else the first
metric (by name, as runs log them; counts `n_…` left out) of the first configured scorer.
Its interval is a seeded bootstrap over the job's cases of the metric's per-case terms, as
its scorer declares them (`Scorer.case_terms`, read from the job's `cases.parquet`), so it
is reproducible bit for bit; so is its direction (higher or lower is better). A metric
without declared terms gets no interval and is ranked higher-is-better.

**Who won.** The job with the best value *wins* only when it beats every other ranked job
significantly: a paired bootstrap of the difference over the cases both scored (the
resampling `ragtrack compare` uses, `stats.paired_bootstrap`) whose whole interval lies on
the better side of 0. Otherwise the top job and every job it does not beat are *tied*,
and the summary says so: no winner is named for an exact tie or an overlap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ragtrack.core.errors import InputError
from ragtrack.scorers.base import CaseColumns, CaseTerms, get_scorer_class

if TYPE_CHECKING:
    import pandas

__all__ = [
    "DEFAULT_HEADLINE",
    "JobOutcome",
    "JobScores",
    "Margin",
    "SummaryRow",
    "SweepJob",
    "SweepSummary",
    "headline_metric",
    "headline_terms",
    "plot_summary",
    "render_summary",
    "summarize",
    "summary_frame",
    "summary_lines",
    "verdict",
]

DEFAULT_HEADLINE = "eval_json_v2/eval_score_avg"


class JobOutcome(BaseModel):
    """What a sweep job returns to the sweeper: the run that holds its result, and whether it was reused."""

    model_config = ConfigDict(frozen=True)

    run_id: str | None  # None when tracking is off
    reused: bool = False


class SweepJob(BaseModel):
    """One job of a sweep as the sweeper saw it end."""

    model_config = ConfigDict(frozen=True)

    index: int
    overrides: list[str]  # the job's overrides (secrets masked)
    status: str  # the MLflow status of its run, or FAILED when it failed before creating one
    run_id: str | None = None
    run_name: str | None = None
    # the furthest stage the job's run reached: "full", or "dev" when a staged job stopped at its gate
    stage: str | None = None
    reused: bool = False
    error: str | None = None  # one line, for a failed job


class JobScores(BaseModel):
    """A job's logged metrics and its headline metric's per-case terms (None: not declared, or no per-case
    table), with the case id of each term (for pairing jobs case by case)."""

    model_config = ConfigDict(frozen=True)

    metrics: dict[str, float] = Field(default_factory=dict)
    terms: CaseTerms | None = None
    case_ids: list[str] | None = None


class SummaryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    job: int
    overrides: str
    axes: dict[str, str]  # the value of each sweep axis (an override key that varies across jobs)
    status: str
    stage: str | None
    reused: bool
    run_id: str | None
    run_name: str | None
    value: float  # the logged headline metric (NaN: none)
    ci_low: float
    ci_high: float
    n_cases: int  # cases in the interval
    gate_all: float
    error: str | None


class Margin(BaseModel):
    """The top job against another: the paired difference `top − other` and its interval over their
    shared cases."""

    model_config = ConfigDict(frozen=True)

    job: int
    diff: float
    low: float
    high: float
    n_shared: int  # cases both jobs counted in the metric
    significant: bool


class SweepSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    metric: str
    higher_is_better: bool
    confidence: float
    seed: int
    n_resamples: int
    axes: list[str]
    rows: list[SummaryRow]
    best: SummaryRow | None  # the top value; the winner only when `winner` says so
    margins: list[Margin] = Field(default_factory=list)  # the top job against each other ranked job
    tied: list[int] = Field(
        default_factory=list
    )  # jobs the top one does not beat significantly, itself first

    @property
    def winner(self) -> SummaryRow | None:
        """The top job when it beats every other ranked job significantly, else None."""
        return self.best if self.best is not None and self.tied == [self.best.job] else None


def headline_terms(metric: str, columns: CaseColumns) -> CaseTerms | None:
    """The metric's per-case terms as its scorer declares them, from a run's per-case columns; None when it
    has none."""
    scorer = metric.partition("/")[0]
    try:
        declared = get_scorer_class(scorer).case_terms(columns)
    except (InputError, KeyError):  # not a registered scorer's metric, or its per-case columns are missing
        return None
    return next((t for t in declared if t.metric == metric), None)


def headline_metric(
    configured: str | None, scorers: Sequence[str], logged: Sequence[Mapping[str, float]]
) -> str:
    """The configured metric, else the default (see module doc; also when no job logged a metric)."""
    if configured:
        return configured
    names = sorted({k for m in logged for k in m})
    if DEFAULT_HEADLINE in names:
        return DEFAULT_HEADLINE
    for scorer in scorers:
        try:
            declared = get_scorer_class(scorer).headline
        except InputError:  # not a registered scorer
            continue
        if declared and f"{scorer}/{declared}" in names:
            return f"{scorer}/{declared}"
    for scorer in scorers:
        for name in names:
            scope, _, metric = name.partition("/")
            if scope == scorer and not metric.startswith("n_"):
                return name
    return DEFAULT_HEADLINE


def _axes(jobs: Sequence[SweepJob]) -> list[str]:
    """Override keys whose value differs between jobs, in first-seen order."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for o in job.overrides:
            key, _, value = o.partition("=")
            values.setdefault(key, set()).add(value)
    varying = [k for k, v in values.items() if len(v) > 1 or any(k not in _as_dict(j) for j in jobs)]
    return varying or list(values)[:1]


def _as_dict(job: SweepJob) -> dict[str, str]:
    return dict(o.partition("=")[::2] for o in job.overrides)


def summarize(
    jobs: Sequence[SweepJob],
    scores: Mapping[int, JobScores],
    metric: str,
    *,
    seed: int = 0,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
) -> SweepSummary:
    """One row per job (in job order); the best is the finished job with the best value (its terms give the
    direction).

    Jobs whose staged run stopped at the dev gate are ranked only when no job reached the full set.
    """
    from ragtrack.analysis.stats import bootstrap_ratio_ci

    axes = _axes(jobs)
    rows = []
    for job in jobs:
        s = scores.get(job.index, JobScores())
        value = s.metrics.get(metric, math.nan)
        low = high = math.nan
        n = 0
        if s.terms is not None and not math.isnan(value):
            ci = bootstrap_ratio_ci(
                s.terms.num, s.terms.den, seed=seed, n_resamples=n_resamples, confidence=confidence
            )
            if ci.estimate == value:  # the terms are those of the logged number
                low, high, n = ci.low, ci.high, ci.n
        given = _as_dict(job)
        rows.append(
            SummaryRow(
                job=job.index,
                overrides=" ".join(job.overrides),
                axes={a: given.get(a, "") for a in axes},
                status=job.status,
                stage=job.stage,
                reused=job.reused,
                run_id=job.run_id,
                run_name=job.run_name,
                value=value,
                ci_low=low,
                ci_high=high,
                n_cases=n,
                gate_all=s.metrics.get("gate/all", math.nan),
                error=job.error,
            )
        )
    ranked = [r for r in rows if r.status == "FINISHED" and not math.isnan(r.value)]
    ranked = [
        r for r in ranked if r.stage != "dev"
    ] or ranked  # a dev subset's score ranks only when no job got further
    declared = [s.terms for s in scores.values() if s.terms is not None]
    higher = declared[0].higher_is_better if declared else True
    best = None
    margins: list[Margin] = []
    if ranked:
        best = (max if higher else min)(ranked, key=lambda r: r.value)  # the first of equals is the top
        margins = [
            _margin(best.job, r.job, scores, higher, seed, n_resamples, confidence)
            for r in ranked
            if r is not best
        ]
    tied = ([best.job] + [m.job for m in margins if not m.significant]) if best is not None else []
    return SweepSummary(
        metric=metric,
        higher_is_better=higher,
        confidence=confidence,
        seed=seed,
        n_resamples=n_resamples,
        axes=axes,
        rows=rows,
        best=best,
        margins=margins,
        tied=tied,
    )


def _margin(
    top: int,
    other: int,
    scores: Mapping[int, JobScores],
    higher: bool,
    seed: int,
    n_resamples: int,
    confidence: float,
) -> Margin:
    """`top − other` over the cases both jobs scored, paired; not significant when either lacks per-case
    terms."""
    from ragtrack.analysis.stats import paired_bootstrap

    a, b = scores.get(other, JobScores()), scores.get(top, JobScores())
    if a.terms is None or b.terms is None or a.case_ids is None or b.case_ids is None:
        return Margin(job=other, diff=math.nan, low=math.nan, high=math.nan, n_shared=0, significant=False)
    in_a = set(a.case_ids)
    shared = [cid for cid in b.case_ids if cid in in_a]
    ta, tb = _on(a, shared), _on(b, shared)
    ((low, high),) = paired_bootstrap([ta], [tb], n_resamples=n_resamples, seed=seed, confidence=confidence)
    significant = low > 0 if higher else high < 0
    counted = sum(1 for da, db in zip(ta.den, tb.den, strict=True) if da > 0 and db > 0)
    return Margin(
        job=other,
        diff=tb.value - ta.value,
        low=low,
        high=high,
        n_shared=counted,
        significant=bool(significant),
    )


def _on(scores: JobScores, ids: Sequence[str]) -> CaseTerms:
    """A job's terms restricted to `ids`, in that order."""
    assert scores.terms is not None and scores.case_ids is not None
    t = scores.terms
    at = {cid: i for i, cid in enumerate(scores.case_ids)}
    return t.model_copy(update={"num": [t.num[at[c]] for c in ids], "den": [t.den[at[c]] for c in ids]})


def _fmt(v: float) -> str:
    return "–" if math.isnan(v) else f"{v:.4g}"


def summary_frame(summary: SweepSummary) -> pandas.DataFrame:
    """`sweep_summary.parquet`: one row per job; an axis column per sweep axis; the metric, its bounds and
    n."""
    import pandas as pd

    m = summary.metric
    records = []
    for r in summary.rows:
        records.append(
            {
                "job": r.job,
                **{f"axis/{a}": v for a, v in r.axes.items()},
                "overrides": r.overrides,
                "status": r.status,
                "stage": r.stage,
                "reused": r.reused,
                "run_id": r.run_id,
                "run_name": r.run_name,
                m: r.value,
                f"{m}/ci_low": r.ci_low,
                f"{m}/ci_high": r.ci_high,
                "n_cases": r.n_cases,
                "gate/all": r.gate_all,
                "best": summary.winner is not None and r.job == summary.winner.job,
                "tied": r.job in summary.tied and len(summary.tied) > 1,
                "error": r.error,
            }
        )
    return pd.DataFrame.from_records(records)


def _status(r: SummaryRow) -> str:
    status = r.status + (" (reused)" if r.reused else "") + (" (dev stage only)" if r.stage == "dev" else "")
    return status + (f": {r.error}" if r.error else "")


def _ci(r: SummaryRow) -> str:
    return f"[{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]" if not math.isnan(r.ci_low) else "–"


def verdict(summary: SweepSummary) -> str:
    """One line: the winner and its smallest margin, the tie, or that nothing was ranked."""
    if summary.best is None:
        return "no winner: no finished job logged the headline metric"
    pct = f"{summary.confidence:.0%}"
    if summary.winner is not None:
        closest = min(summary.margins, key=lambda m: abs(m.diff), default=None)
        ahead = (
            (
                f", ahead of #{closest.job} by {_fmt(closest.diff)} "
                f"[{_fmt(closest.low)}, {_fmt(closest.high)}] "
                f"({pct} paired bootstrap over {closest.n_shared} cases)"
            )
            if closest
            else ""
        )
        return f"winner: #{summary.best.job}{ahead}"
    others = ", ".join(f"#{j}" for j in summary.tied[1:])
    return (
        f"no winner: #{summary.best.job} is not significantly better than {others} on {summary.metric} "
        f"({pct} paired bootstrap)"
    )


def summary_lines(summary: SweepSummary) -> list[str]:
    """One console line per job: its axes, the metric with its interval, its status; the winner or the tied
    marked; then the verdict."""
    out = []
    for r in summary.rows:
        mark = ""
        if summary.winner is not None and r.job == summary.winner.job:
            mark = "  <- best"
        elif r.job in summary.tied and len(summary.tied) > 1:
            mark = "  <- tied"
        label = " ".join(f"{a}={r.axes[a]}" for a in summary.axes) or r.overrides
        out.append(f"#{r.job} {label}: {_fmt(r.value)} {_ci(r)} {_status(r)}{mark}")
    return out + [verdict(summary)]


def render_summary(summary: SweepSummary, parent_run_id: str | None = None) -> str:
    """`sweep_summary.md`: what was ranked and how, then one table row per job."""
    pct = f"{summary.confidence:.0%}"
    lines = ["# Sweep summary", ""]
    if parent_run_id:
        lines.append(f"- sweep run: `{parent_run_id}`")
    lines += [
        f"- headline metric: `{summary.metric}` "
        f"({'higher' if summary.higher_is_better else 'lower'} is better)",
        f"- {pct} interval: percentile bootstrap over cases, seed {summary.seed}, "
        f"{summary.n_resamples} resamples",
    ]
    if summary.winner is not None:
        b = summary.winner
        lines.append(f"- best: job {b.job} ({b.overrides}), run `{b.run_id}`: {_fmt(b.value)} {_ci(b)}")
    lines.append(f"- {verdict(summary)}")
    failed = [r for r in summary.rows if r.status != "FINISHED"]
    reused = [r for r in summary.rows if r.reused]
    lines.append(f"- jobs: {len(summary.rows)}, failed {len(failed)}, reused {len(reused)}")
    lines += [
        "",
        f"| job | {' | '.join(summary.axes)} | status | run | {summary.metric} | {pct} CI | n | gate/all |",
        "|---" * (len(summary.axes) + 7) + "|",
    ]
    for r in summary.rows:
        mark = (
            " **best**"
            if summary.winner is not None and r.job == summary.winner.job
            else (" (tied)" if r.job in summary.tied and len(summary.tied) > 1 else "")
        )
        run = f"`{r.run_id}`" if r.run_id else "–"
        cells = [
            str(r.job),
            *(r.axes[a] for a in summary.axes),
            _status(r).replace("|", "\\|"),
            run,
            _fmt(r.value) + mark,
            _ci(r),
            str(r.n_cases) if r.n_cases else "–",
            _fmt(r.gate_all),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _group(row: SummaryRow, axes: Sequence[str]) -> str:
    return " ".join(row.axes[a] for a in axes) or row.overrides or f"job {row.job}"


def plot_summary(summary: SweepSummary, path: Path) -> None:
    """`sweep_summary.png`: the headline metric per job with its interval, grouped by the sweep's last axis.

    Two or more axes: the last axis is the bar colour, the others label the groups
    (e.g. adapters × prompts: one group per adapter, one bar per prompt). A job without a
    value (failed) leaves a gap in its group.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if len(summary.axes) >= 2:
        hue_axis, group_axes = summary.axes[-1], summary.axes[:-1]
    else:
        hue_axis, group_axes = None, summary.axes
    groups: list[str] = []
    hues: list[str] = []
    for r in summary.rows:
        g = _group(r, group_axes)
        if g not in groups:
            groups.append(g)
        h = r.axes[hue_axis] if hue_axis else ""
        if h not in hues:
            hues.append(h)
    width = 0.8 / len(hues)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) * max(1, len(hues)) ** 0.5 + 2), 4.5))
    for i, h in enumerate(hues):
        xs, ys, lo, hi = [], [], [], []
        for r in summary.rows:
            if (r.axes[hue_axis] if hue_axis else "") != h or math.isnan(r.value):
                continue
            g = _group(r, group_axes)
            xs.append(groups.index(g) + (i - (len(hues) - 1) / 2) * width)
            ys.append(r.value)
            has_ci = not math.isnan(r.ci_low)
            lo.append(r.value - r.ci_low if has_ci else 0.0)
            hi.append(r.ci_high - r.value if has_ci else 0.0)
        ax.bar(xs, ys, width=width, yerr=[lo, hi], capsize=3, label=f"{hue_axis}={h}" if hue_axis else None)
    ax.set_xticks(
        range(len(groups)),
        groups,
        rotation=20 if len(groups) > 4 else 0,
        ha="right" if len(groups) > 4 else "center",
    )
    ax.set_xlabel(" × ".join(group_axes))
    ax.set_ylabel(summary.metric)
    ax.set_title(f"{summary.metric} per job, {summary.confidence:.0%} bootstrap interval")
    if hue_axis:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

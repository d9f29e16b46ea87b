"""The sweep summary, pure: rows, intervals, the best job, the Markdown table and the chart."""

from __future__ import annotations

import math

import pytest

from ragtrack.analysis.summary import (
    JobScores,
    SweepJob,
    headline_metric,
    headline_terms,
    plot_summary,
    render_summary,
    summarize,
    summary_frame,
    summary_lines,
)
from ragtrack.scorers.base import CaseTerms

M = "eval_json_v2/eval_score_avg"


def _job(i, adapter, prompt, status="FINISHED", **kw):
    return SweepJob(
        index=i, overrides=[f"adapter={adapter}", f"prompt={prompt}"], status=status, run_id=f"run{i}", **kw
    )


def _scores(values, higher_is_better=True, ids=None):
    terms = CaseTerms(metric=M, num=values, den=[1.0] * len(values), higher_is_better=higher_is_better)
    ids = ids or [f"c{i}" for i in range(len(values))]
    return JobScores(metrics={M: math.fsum(values) / len(values), "gate/all": 0.0}, terms=terms, case_ids=ids)


@pytest.fixture
def summary():
    jobs = [
        _job(0, "base", "v1"),
        _job(1, "base", "v2"),
        _job(2, "lora", "v1", status="FAILED", error="ValueError: no"),
        _job(3, "lora", "v2", reused=True),
    ]
    scores = {0: _scores([10.0, 20.0, 30.0]), 1: _scores([50.0, 60.0, 70.0]), 3: _scores([80.0, 90.0, 100.0])}
    return summarize(jobs, scores, M, n_resamples=500)


def test_one_row_per_job_with_the_sweep_axes(summary):
    assert [(r.job, r.axes) for r in summary.rows] == [
        (0, {"adapter": "base", "prompt": "v1"}),
        (1, {"adapter": "base", "prompt": "v2"}),
        (2, {"adapter": "lora", "prompt": "v1"}),
        (3, {"adapter": "lora", "prompt": "v2"}),
    ]


def test_each_finished_row_has_its_value_inside_its_interval(summary):
    assert all(
        r.ci_low <= r.value <= r.ci_high and r.n_cases == 3 for r in summary.rows if r.status == "FINISHED"
    )


def test_failed_job_is_listed_without_a_value(summary):
    failed = summary.rows[2]
    assert (failed.status, failed.error, math.isnan(failed.value)) == ("FAILED", "ValueError: no", True)


def test_best_is_the_highest_finished_job(summary):
    assert summary.best.job == 3


def test_lower_is_better_metric_picks_the_lowest():
    jobs = [_job(0, "a", "v1"), _job(1, "b", "v1")]
    low = summarize(jobs, {0: _scores([5.0], False), 1: _scores([1.0], False)}, M, n_resamples=100)
    assert (low.best.job, low.higher_is_better) == (1, False)


def test_no_interval_when_the_terms_are_not_those_of_the_logged_metric():
    wrong = JobScores(metrics={M: 42.0}, terms=CaseTerms(metric=M, num=[1.0, 2.0], den=[1.0, 1.0]))
    row = summarize([_job(0, "a", "v1")], {0: wrong}, M, n_resamples=100).rows[0]
    assert row.value == 42.0 and math.isnan(row.ci_low) and row.n_cases == 0


def test_dev_only_jobs_rank_below_full_set_jobs():
    jobs = [_job(0, "a", "v1", stage="dev"), _job(1, "b", "v1", stage="full")]
    s = summarize(jobs, {0: _scores([99.0]), 1: _scores([50.0])}, M, n_resamples=100)
    assert s.best.job == 1


def test_markdown_lists_every_job_and_names_the_best(summary):
    md = render_summary(summary, "parent123")
    assert "| 2 | lora | v1 | FAILED: ValueError: no |" in md and "FINISHED (reused)" in md
    assert "- best: job 3 (adapter=lora prompt=v2), run `run3`" in md and "- winner: #3, ahead of #1" in md


def test_frame_has_the_metric_and_its_bounds(summary):
    frame = summary_frame(summary)
    assert list(frame["axis/adapter"]) == ["base", "base", "lora", "lora"]
    assert {M, f"{M}/ci_low", f"{M}/ci_high", "status", "run_id", "best"} <= set(frame.columns)


def test_chart_is_a_png(summary, tmp_path):
    plot_summary(summary, tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_headline_defaults_to_the_eval_score_then_the_first_scorers_first_metric():
    logged = [{"refusal_citation/precision": 1.0, "refusal_citation/n_scored": 3.0, "other/x": 1.0}]
    assert headline_metric(None, ["refusal_citation", "other"], logged) == "refusal_citation/precision"
    assert headline_metric(None, ["refusal_citation"], [{M: 1.0, **logged[0]}]) == M
    assert headline_metric("other/x", ["refusal_citation"], logged) == "other/x"
    assert (
        headline_metric(None, ["refusal_citation"], []) == M
    )  # every job failed: the default names the column


def test_sweep_whose_jobs_all_failed_is_still_summarised(tmp_path):
    jobs = [
        _job(0, "a", "v1", status="FAILED", error="E: x"),
        _job(1, "b", "v1", status="FAILED", error="E: y"),
    ]
    s = summarize(jobs, {}, M, n_resamples=100)
    plot_summary(s, tmp_path / "s.png")
    assert s.best is None and render_summary(s).count("| FAILED: E: ") == 2 and (tmp_path / "s.png").exists()


def test_headline_terms_come_from_the_scorers_declaration():
    columns = {"eval_json_v2/score": [10.0, None, 30.0], "eval_json_v2/schema_ok": [True, None, False]}
    columns |= {
        f"eval_json_v2/{k}": [0.0, None, 1.0]
        for k in (
            "target_audience",
            "main_topic",
            "sub_topic",
            "detailed_description_f1",
            "original_evidence",
            "predicted_questions_f1",
            "grounding",
        )
    }
    terms = headline_terms(M, columns)
    assert (terms.num, terms.den) == ([10.0, 0.0, 30.0], [1.0, 0.0, 1.0])


def test_metric_without_declared_terms_has_none():
    assert headline_terms("nosuchscorer/x", {}) is None and headline_terms(M, {}) is None


# ------------------------------------------------------------------ who won


def _pair(top, other, **kw):
    jobs = [_job(0, "a", "v1"), _job(1, "b", "v1")]
    return summarize(jobs, {0: top, 1: other}, M, n_resamples=2000, **kw)


def test_a_job_that_beats_the_other_on_every_case_wins():
    s = _pair(_scores([9.0, 8.0, 9.5, 8.5, 9.0, 9.2] * 5), _scores([5.0, 4.0, 5.5, 4.5, 5.0, 5.2] * 5))
    assert (s.winner.job, s.tied) == (0, [0])


def test_an_exact_tie_names_no_winner():
    s = _pair(_scores([7.0, 8.0, 9.0] * 4), _scores([7.0, 8.0, 9.0] * 4))
    assert (s.winner, s.tied) == (None, [0, 1])


def test_a_small_gap_inside_the_noise_is_a_tie():
    top = [10.0, 0.0, 9.0, 1.0, 10.0, 0.0, 8.0, 2.0]
    s = _pair(_scores(top), _scores([v - 0.5 if i % 4 == 0 else v for i, v in enumerate(top)]))
    assert (s.best.job, s.winner, s.margins[0].low <= 0 <= s.margins[0].high) == (0, None, True)


def test_jobs_are_paired_on_the_cases_both_scored():
    s = _pair(
        _scores([9.0, 9.0, 9.0, 1.0], ids=["a", "b", "c", "x"]),
        _scores([2.0, 2.0, 2.0, 9.0], ids=["y", "a", "b", "c"]),
    )
    assert s.margins[0].n_shared == 3


def test_a_job_without_per_case_terms_cannot_be_beaten_significantly():
    s = _pair(_scores([9.0] * 10), JobScores(metrics={M: 1.0}))
    assert (s.winner, s.tied) == (None, [0, 1])


def test_the_console_says_who_won_and_by_how_much():
    s = _pair(_scores([9.0, 8.0, 9.5, 8.5] * 5), _scores([5.0, 4.0, 5.5, 4.5] * 5))
    lines = summary_lines(s)
    assert lines[0].endswith("<- best") and lines[-1].startswith("winner: #0, ahead of #1 by 4")


def test_the_console_names_the_tied_jobs():
    lines = summary_lines(_pair(_scores([7.0, 8.0] * 3), _scores([7.0, 8.0] * 3)))
    assert [line.endswith("<- tied") for line in lines[:2]] == [True, True] and lines[-1].startswith(
        "no winner: #0"
    )


def test_the_headline_is_the_overall_figure_a_scorer_declares():
    logged = [{"earag/entity_coverage": 1.0, "earag/overall": 0.5, "rag/answer_correctness": 0.2}]
    assert headline_metric(None, ["rag", "earag"], logged) == "earag/overall"

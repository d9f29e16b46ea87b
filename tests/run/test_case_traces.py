"""Cases as trace records: one assessment per per-case column, the scorer's error text as rationale."""

from __future__ import annotations

import pytest

from ragtrack.run.case_traces import case_traces
from ragtrack.run.runner import run
from tests.conftest import make_config


@pytest.fixture
def traces(demo_files):
    """The bad predictions of the tiny eval set, scored untracked: {case id: CaseTrace}."""
    result = run(make_config(demo_files, predictions="bad"))
    return {t.case_id: t for t in case_traces(result)}, result


def test_one_trace_per_case_in_case_order(traces):
    by_id, result = traces
    assert list(by_id) == [c.id for c in result.eval_set.cases]


def test_every_computed_column_is_one_assessment(traces):
    by_id, result = traces
    expected = {
        k
        for out in result.outputs
        for cs in out.cases
        if cs.case_id == "a1"
        for k, v in cs.values.items()
        if v not in (None, "") and not k.endswith("/error")
    }
    assert {a.name for a in by_id["a1"].assessments} == expected


def test_scorer_error_is_the_rationale_of_its_assessments(traces):
    by_id, _ = traces
    score = next(a for a in by_id["a1"].assessments if a.name == "eval_json_v2/score")
    assert score.value == 0.0 and score.rationale.startswith("not JSON")


def test_a_scorer_that_does_not_apply_to_a_case_says_why_in_every_column(traces):
    by_id, _ = traces
    skipped = [a for a in by_id["u1"].assessments if a.name.startswith("eval_json_v2/")]
    assert skipped and {(a.value, a.rationale) for a in skipped} == {
        (None, "not scored: eval_json_v2 scores question_v2 cases (with `expected`), and this case has none")
    }


def test_an_empty_text_column_is_no_assessment(traces):
    by_id, result = traces
    (out,) = [o for o in result.outputs if o.info.name == "refusal_citation"]
    assert next(cs for cs in out.cases if cs.case_id == "a2").values["refusal_citation/citations"] == ""
    assert "refusal_citation/citations" not in {a.name for a in by_id["a2"].assessments}


def test_source_names_the_scorer_and_its_version(traces):
    by_id, _ = traces
    assert {a.source for a in by_id["a1"].assessments} == {"eval_json_v2@1", "refusal_citation@2"}


def test_missing_prediction_is_traced_with_an_empty_answer(traces):
    by_id, _ = traces
    assert by_id["a2"].answer == "" and by_id["a2"].question == "What uptime does the SLA guarantee?"

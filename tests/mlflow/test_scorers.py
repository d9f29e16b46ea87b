"""ragtrack's scorers as MLflow GenAI scorers: `mlflow.genai.evaluate` gives the numbers of `ragtrack
score`."""

from __future__ import annotations

import mlflow
import pytest

from ragtrack.core.errors import InputError
from ragtrack.mlflow.scorers import eval_rows, ragtrack_scorer
from ragtrack.scorers import get_scorer_class
from tests.mlflow.conftest import EVAL_SET, PREDICTIONS

GOLD = {"gold": {"answerable": False, "gold_ids": []}}
BAD_ROW = {
    "inputs": {"id": "x1", "question": "Who?"},
    "outputs": "x",
    "expectations": {"gold": {"answerable": "perhaps"}},
}


@pytest.fixture(scope="module")
def evaluation(module_store):
    """The demo's base/v1 answers, and one row of bad input, through `mlflow.genai.evaluate` with both
    ragtrack scorers."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(
            "MLFLOW_GENAI_EVAL_MAX_WORKERS", "2"
        )  # a SQLite store: more threads only queue for its pool
        mp.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
        return mlflow.genai.evaluate(
            data=[*eval_rows(EVAL_SET, PREDICTIONS), BAD_ROW],
            scorers=[ragtrack_scorer("eval_json_v2"), ragtrack_scorer("refusal_citation")],
        )


def test_mean_of_each_metric_equals_ragtrack_score(evaluation, ragtrack_score):
    # Every metric the scorers declare as per-case terms; MLflow averages with numpy, ragtrack
    # with math.fsum: the same number up to the last bits of a float. The bad row adds nothing.
    cases = ragtrack_score["cases"]
    columns = {k: [c[k] for c in cases] for k in cases[0]}
    means = [
        t.metric
        for s in ("eval_json_v2", "refusal_citation")
        for t in get_scorer_class(s).case_terms(columns)
    ]
    expected = {f"{m}/mean": pytest.approx(ragtrack_score["metrics"][m], rel=1e-12) for m in means}
    assert len(means) == 16 and evaluation.metrics == expected


def test_every_row_is_a_trace_of_the_evaluation_run(evaluation):
    traces = mlflow.search_traces(run_id=evaluation.run_id, return_type="list")
    assert len(traces) == 53


def test_bad_row_is_an_error_on_its_trace_naming_the_field(evaluation):
    traces = mlflow.search_traces(run_id=evaluation.run_id, return_type="list")
    errors = {
        a.name: a.error.error_message for t in traces for a in t.info.assessments if getattr(a, "error", None)
    }
    assert errors == {
        "refusal_citation": "expectations: gold.answerable: Input should be a valid boolean, "
        "unable to interpret input",
        "eval_json_v2": "expectations: gold.answerable: Input should be a valid boolean, "
        "unable to interpret input",
    }


def test_a_case_without_the_scorers_ground_truth_gets_no_feedback():
    scorer = ragtrack_scorer("eval_json_v2")
    assert scorer(inputs={"id": "u1", "question": "Who?"}, outputs="not in context", expectations=GOLD) == []


def test_feedback_counts_a_case_only_in_the_means_it_belongs_to():
    # An unanswerable case is in under_refusal's denominator, not in over_refusal's.
    feedback = ragtrack_scorer("refusal_citation")(
        inputs={"id": "u1", "question": "Who?"}, outputs="Ada.", expectations=GOLD
    )
    assert {f.name: f.value for f in feedback} == {
        "refusal_citation/precision": 0.0,
        "refusal_citation/under_refusal": 1.0,
        "refusal_citation/compliance": 0.0,
    }


def test_unknown_scorer_is_an_input_error():
    with pytest.raises(InputError, match="unknown scorer 'nope'"):
        ragtrack_scorer("nope")

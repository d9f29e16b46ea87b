"""`mlflow.model_evaluator` "ragtrack": `mlflow.models.evaluate` scores a DataFrame of answers and logs it
like a ragtrack run."""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest

from ragtrack.core.errors import InputError
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.mlflow.evaluator import RagtrackEvaluator
from tests.mlflow.conftest import EVAL_SET, PREDICTIONS

CONFIG = {
    "eval_set": [str(f) for f in EVAL_SET],
    "scorers": {"eval_json_v2": {}, "refusal_citation": {}},
    "gates": {"G1_precision": ["refusal_citation/precision >= 0.80"]},
}


def _evaluate(data: pd.DataFrame, config: dict = CONFIG):
    return mlflow.models.evaluate(
        data=data, model_type="question-answering", evaluators="ragtrack", evaluator_config=config
    )


@pytest.fixture(scope="module")
def evaluation(module_store):
    """The demo's base/v1 answers (the predictions file as a DataFrame) evaluated by ragtrack: (client,
    result)."""
    return module_store[0], _evaluate(pd.read_json(PREDICTIONS, lines=True))


def test_evaluator_is_registered_with_mlflow():
    assert "ragtrack" in mlflow.models.list_evaluators()


def test_metrics_equal_ragtrack_score(evaluation, ragtrack_score):
    _, result = evaluation
    expected = {k: v for k, v in ragtrack_score["metrics"].items() if not k.startswith("gate/")}
    expected.update({"gate/G1_precision": 0.0, "gate/all": 0.0})
    assert result.metrics == expected


def test_run_logs_the_metrics_under_ragtrack_names(evaluation):
    client, result = evaluation
    assert client.get_run(result.run_id).data.metrics == result.metrics


def test_run_logs_scorer_versions_and_the_eval_set_version(evaluation):
    client, result = evaluation
    params = client.get_run(result.run_id).data.params
    version = load_eval_set([str(f) for f in EVAL_SET])[0].version
    got = (
        params["scorer/eval_json_v2/version"],
        params["scorer/refusal_citation/version"],
        params["eval_set_version"],
    )
    assert got == ("1", "2", version)


def test_run_logs_the_per_case_table(evaluation):
    client, result = evaluation
    run = client.get_run(result.run_id)
    table = client.load_table(
        run.info.experiment_id, artifact_file="cases_table.json", run_ids=[result.run_id]
    )
    assert (len(table), table["eval_json_v2/score"].notna().sum()) == (52, 44)


def test_predictions_names_the_answer_column(module_store):
    answers = pd.read_json(PREDICTIONS, lines=True).head(3).rename(columns={"answer": "response"})
    result = mlflow.models.evaluate(
        data=answers,
        predictions="response",
        model_type="question-answering",
        evaluators="ragtrack",
        evaluator_config=CONFIG,
    )
    assert (result.metrics["predictions/n_cases"], result.metrics["predictions/n_missing"]) == (52.0, 49.0)


def test_bad_answer_row_is_an_input_error_and_the_run_ends_failed(module_store):
    client, exp_id = module_store
    with pytest.raises(
        InputError, match=r"^data: row 1: answer: expected the raw model output as a string, got int$"
    ):
        _evaluate(pd.DataFrame({"id": ["q01", "q02"], "answer": ["fine", 42]}, dtype=object))
    (run,) = client.search_runs([exp_id], filter_string="attributes.status = 'FAILED'")
    assert run.info.status == "FAILED"


def test_unknown_config_key_is_an_input_error_naming_it():
    with pytest.raises(InputError, match="^evaluator_config: scorer: Extra inputs are not permitted$"):
        RagtrackEvaluator().evaluate(
            model_type="question-answering",
            dataset=None,
            run_id="r",
            evaluator_config={**CONFIG, "scorer": {}},
        )


def test_evaluator_stays_out_of_evaluations_that_name_no_eval_set():
    assert not RagtrackEvaluator.can_evaluate(
        model_type="classifier", evaluator_config={"log_model_explainability": False}
    )

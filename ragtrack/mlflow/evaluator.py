"""`mlflow.model_evaluator` "ragtrack": a DataFrame of answers scored by ragtrack's scorers, logged like a
ragtrack run.

    mlflow.models.evaluate(
        data=answers,                     # one row per answer, columns as in a predictions line (SPEC §6)
        model_type="question-answering",  # MLflow needs a model type (or extra_metrics) to pick evaluators
        evaluators="ragtrack",
        evaluator_config={
            "eval_set": ["questions.json", "qaset.json"],
            "scorers": {"eval_json_v2": {}},
            "gates": {},
        },
    )

The rows are matched to the eval set's cases as `ragtrack score` matches the lines of a
predictions file (by `id`/`qid`, else by question text); `predictions="col"` names the
answer column when it is not `answer`. They are scored by the configured scorers (with
their parameters) and gates. The run gets what a ragtrack run records of its scores: every
metric as `<scorer>/<metric>` (with `predictions/*` and `gate/*`), the scorers' versions,
code hashes and parameters as params (`scorer/<name>/…`), `eval_set_version`,
`ragtrack_version`, and the per-case table `cases_table.json`.
Bad input is an `InputError` naming the row and field; MLflow then ends the run FAILED.
`mlflow.evaluate` is MLflow 3's deprecated name for `mlflow.models.evaluate`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mlflow.models.evaluation import EvaluationResult, ModelEvaluator
from mlflow.tracking import MlflowClient
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragtrack.core.errors import InputError

if TYPE_CHECKING:
    import pandas

    from ragtrack.inputs.predictions import PredictionRecord

__all__ = ["EvaluatorConfig", "RagtrackEvaluator"]

CONFIG = "evaluator_config"


class EvaluatorConfig(BaseModel):
    """`evaluator_config` of the ragtrack evaluator."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eval_set: list[str]  # eval-set files holding the ground truth, merged by id
    scorers: dict[str, dict[str, Any]]  # scorer name -> its parameters ({} for the defaults)
    gates: dict[str, list[str]] = Field(
        default_factory=dict
    )  # as in conf/gates: name -> ["metric op threshold", ...]

    @classmethod
    def parse(cls, raw: Any) -> EvaluatorConfig:
        try:
            return cls.model_validate(raw or {})
        except ValidationError as e:
            first = e.errors()[0]
            raise InputError(CONFIG, first["msg"], field=".".join(str(x) for x in first["loc"])) from None


class RagtrackEvaluator(ModelEvaluator):
    """Scores recorded answers; it takes part only when its config names an eval set."""

    @classmethod
    def can_evaluate(
        cls, *, model_type: str | None, evaluator_config: dict[str, Any] | None, **kwargs: Any
    ) -> bool:
        # MLflow also asks every registered evaluator when none is named: stay out of evaluations not meant
        # for us.
        return isinstance(evaluator_config, dict) and "eval_set" in evaluator_config

    def evaluate(
        self,
        *,
        model_type: str | None,
        dataset: Any,
        run_id: str,
        evaluator_config: dict[str, Any] | None,
        model: Any = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        import pandas as pd

        from ragtrack import __version__
        from ragtrack.analysis.gates import parse_gates
        from ragtrack.run.runner import score_files
        from ragtrack.scorers import build_scorer
        from ragtrack.tracking.sink import log_batches, scorer_params

        if model is not None:
            raise InputError(
                "model",
                "the ragtrack evaluator scores recorded answers: pass them as `data`, without a model",
            )
        cfg = EvaluatorConfig.parse(evaluator_config)
        scorers = [build_scorer(name, params) for name, params in cfg.scorers.items()]
        gates = parse_gates(cfg.gates, where=f"{CONFIG}: gates")
        scored = score_files(cfg.eval_set, _records(_answers(dataset)), scorers, gates)

        client = MlflowClient()
        params = {
            "eval_set_version": scored.eval_set.version,
            "n_cases": str(len(scored.eval_set.cases)),
            "ragtrack_version": __version__,
        }
        for out in scored.outputs:
            params.update(scorer_params(out.info))
        tags = (
            {"ragtrack.gates_passed": str(scored.metrics.get("gate/all", 0.0) == 1.0).lower()}
            if scored.gates
            else {}
        )
        log_batches(client, run_id, params=params, metrics=scored.metrics, tags=tags)
        client.log_table(run_id, data=pd.DataFrame(scored.rows), artifact_file="cases_table.json")
        return EvaluationResult(
            metrics={k: v for k, v in scored.metrics.items() if not math.isnan(v)},
            artifacts={},
            run_id=run_id,
        )


def _answers(dataset: Any) -> pandas.DataFrame:
    """The evaluation data as a frame; the column MLflow holds as predictions becomes `answer`."""
    frame = dataset.features_data.copy()
    if dataset.has_predictions:
        frame["answer"] = list(dataset.predictions_data)
    return frame


def _records(frame: pandas.DataFrame) -> list[PredictionRecord]:
    """Each row as a predictions line: empty cells (None, NaN) left out, arrays as lists."""
    from ragtrack.inputs.predictions import parse_prediction

    records = []
    for i, row in enumerate(frame.to_dict("records")):
        line = {str(k): _plain(v) for k, v in row.items() if not _empty(v)}
        records.append(parse_prediction(line, "data", f"row {i}"))
    return records


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _plain(v: Any) -> Any:
    """numpy arrays and scalars (parquet lists, int64 cells) as Python values."""
    return v.tolist() if hasattr(v, "tolist") else v

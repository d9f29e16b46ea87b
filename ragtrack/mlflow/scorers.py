"""ragtrack's scorers as MLflow GenAI scorers.

    from ragtrack.mlflow.scorers import eval_rows, ragtrack_scorer

    rows = eval_rows(["questions.json", "qaset.json"], "predictions.jsonl")
    mlflow.genai.evaluate(
        data=rows, scorers=[ragtrack_scorer("eval_json_v2"), ragtrack_scorer("refusal_citation")]
    )

ragtrack's scorers score a batch; an MLflow scorer scores one row, and a row is one case:

- `inputs`: `{"id": …, "question": …}`;
- `outputs`: the answer as a string, or an object as a predictions line holds it (`answer`,
  `contexts`, `citations`, …; SPEC §6); None when no answer was recorded (a missing prediction);
- `expectations`: the case's ground truth by section, as `EvalCase` holds it: `expected`
  (question_v2), `gold` (qaset), `reference` (rag).

For each metric the scorer declares as per-case terms (`Scorer.case_terms`: `Σ num / Σ den`)
whose denominators are 0 or 1 (a mean over the cases it counts; all of eval_json_v2's and
refusal_citation's are), the scorer returns one `Feedback` named like the metric with the
case's `num`, and none when the case's `den` is 0 (outside that metric). MLflow's aggregate
`<metric>/mean` is then ragtrack's `<metric>` (MLflow sums with numpy, ragtrack with
`math.fsum`: equal to the last bits of a float). Counts (`n_cases`, `n_missing`, …) are not
means and are not returned. A case without the scorer's section gets no feedback. Bad input
(an unknown expectation key, a malformed output) is an error on that row, which MLflow records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mlflow.entities import Feedback
from mlflow.genai.scorers import Scorer as MlflowScorer
from pydantic import Field, ValidationError

from ragtrack.core.errors import InputError
from ragtrack.core.types import EvalCase, Prediction
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.inputs.predictions import match_prediction_file, parse_prediction
from ragtrack.scorers import Batch, build_scorer

__all__ = ["RagtrackScorer", "eval_rows", "ragtrack_scorer", "to_case", "to_prediction"]


class RagtrackScorer(MlflowScorer):
    """A registered ragtrack scorer (`name`, built with `params`) scoring one row at a time."""

    params: dict[str, Any] = Field(default_factory=dict)

    # MLflow passes only the keywords `__call__` names (`Scorer.run` reads its signature): declaring `trace`
    # and `session` as the base class does would change what MLflow sends it.
    def __call__(  # type: ignore[override]  # no trace/session parameters, on purpose: see above
        self,
        *,
        inputs: dict[str, Any] | None = None,
        outputs: Any = None,
        expectations: dict[str, Any] | None = None,
    ) -> list[Feedback]:
        scorer = build_scorer(self.name, self.params)
        case = to_case(inputs, expectations)
        out = scorer.score(Batch(cases=[case], predictions=[to_prediction(case.id, outputs)]))
        if not out.ids:
            return []
        row = out.row(0)
        notes = "; ".join(f"{k.split('/', 1)[-1]}: {v}" for k, v in row.items() if isinstance(v, str) and v)
        metadata = {"ragtrack.scorer_version": scorer.version}
        terms = scorer.case_terms({k: [v] for k, v in row.items()})
        return [
            Feedback(name=t.metric, value=t.num[0], rationale=notes or None, metadata=metadata)
            for t in terms
            if t.den[0] == 1.0
        ]


def ragtrack_scorer(name: str, **params: Any) -> RagtrackScorer:
    """The registered scorer `name` with `params`; an unknown name or parameter is an `InputError` here,
    not on every row."""
    scorer = build_scorer(name, params)
    return RagtrackScorer(name=name, params=params, description=f"ragtrack scorer {name} v{scorer.version}")


def to_case(inputs: dict[str, Any] | None, expectations: dict[str, Any] | None) -> EvalCase:
    """The case of a row: id and question from `inputs`, ground truth sections from `expectations`."""
    inputs = inputs or {}
    data = {"id": str(inputs.get("id", "")), "question": inputs.get("question", ""), **(expectations or {})}
    try:
        return EvalCase.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        raise InputError("expectations", first["msg"], field=".".join(str(x) for x in first["loc"])) from None


def to_prediction(case_id: str, outputs: Any) -> Prediction:
    """A row's `outputs` as the case's prediction, validated as a predictions line is."""
    if outputs is None:
        return Prediction(case_id=case_id, missing=True)
    line = {"answer": outputs} if isinstance(outputs, str) else outputs
    if not isinstance(line, dict):
        raise InputError(
            "outputs", f"expected the answer as a string or an object, got {type(outputs).__name__}"
        )
    record = parse_prediction({**line, "id": case_id}, "outputs", f"case {case_id!r}")
    return record.prediction.model_copy(update={"case_id": case_id})


def eval_rows(eval_set: Sequence[str | Path], predictions: str | Path) -> list[dict[str, Any]]:
    """Rows for `mlflow.genai.evaluate`: every case of the eval-set files with its prediction, matched as
    `ragtrack score` matches them."""
    es, _ = load_eval_set([str(f) for f in eval_set])
    generation = match_prediction_file(predictions, es.cases)
    return [
        {
            "inputs": {"id": case.id, "question": case.question},
            "outputs": None
            if pred.missing
            else pred.model_dump(mode="json", exclude={"case_id", "missing"}, exclude_none=True),
            "expectations": case.model_dump(
                mode="json", include={"expected", "gold", "reference"}, exclude_none=True
            ),
        }
        for case, pred in zip(es.cases, generation.predictions, strict=True)
    ]

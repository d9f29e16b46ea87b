"""Each scored case as a trace record: its question, its answer and one assessment per per-case column.

Pure: `case_traces(result)` reads the run's result and returns `CaseTrace`s; the tracking
layer (`ragtrack.tracking.traces`) writes them as MLflow traces linked to the run, which
is what MLflow's evaluation view lists and compares run against run, case by case.

Every per-case column a scorer emits (`<scorer>/<column>`) becomes one assessment named
as the column, except its rationale columns (`error`, `reason`, `rationale`), whose text
becomes the rationale of each of that scorer's assessments for the case. A column the
scorer did not compute for the case (None, NaN) or an empty string is no assessment.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from ragtrack.redact import redact_text
from ragtrack.types import ContextChunk, RunResult, ScoreValue

__all__ = ["RATIONALE_COLUMNS", "CaseAssessment", "CaseTrace", "case_traces"]

RATIONALE_COLUMNS = frozenset({"error", "reason", "rationale"})


class CaseAssessment(BaseModel):
    """One per-case column of one scorer: `name` is `<scorer>/<column>`, `source` `<scorer>@<version>`."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float | int | bool | str
    rationale: str | None = None
    source: str


class CaseTrace(BaseModel):
    """One case as it will be traced: inputs, output, the retrieved contexts and the assessments."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    question: str
    answer: str
    contexts: list[ContextChunk]
    latency_ms: float | None = None
    assessments: list[CaseAssessment]


def _assessable(v: ScoreValue) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    return not (isinstance(v, str) and not v)


def case_traces(result: RunResult) -> list[CaseTrace]:
    """One `CaseTrace` per scored case, in case order."""
    by_case: dict[str, list[CaseAssessment]] = {c.id: [] for c in result.eval_set.cases}
    for out in result.outputs:
        source = f"{out.info.name}@{out.info.version}"
        for cs in out.cases:
            reasons = [str(v) for k, v in cs.values.items() if k.rpartition("/")[2] in RATIONALE_COLUMNS and _assessable(v)]
            rationale = redact_text("; ".join(reasons)) if reasons else None
            by_case[cs.case_id].extend(
                CaseAssessment(name=k, value=v, rationale=rationale, source=source)  # type: ignore[arg-type]
                for k, v in cs.values.items()
                if k.rpartition("/")[2] not in RATIONALE_COLUMNS and _assessable(v)
            )
    return [
        CaseTrace(case_id=case.id, question=case.question, answer=pred.answer, contexts=pred.contexts,
                  latency_ms=pred.latency_ms, assessments=by_case[case.id])
        for case, pred in zip(result.eval_set.cases, result.generation.predictions, strict=True)
    ]

"""Each scored case as a trace record: its question, its answer and one assessment per per-case column.

Pure: `case_traces(result)` reads the run's result and returns `CaseTrace`s; the tracking
layer (`ragtrack.tracking.traces`) writes them as MLflow traces linked to the run, which
is what MLflow's evaluation view lists and compares run against run, case by case.

Every per-case column a scorer emits (`<scorer>/<column>`) becomes one assessment named
as the column, except its rationale columns (`error`, `reason`, `rationale`), whose text
becomes the rationale of each of that scorer's assessments for the case. A column the
scorer computed for other cases but not for this one (None, NaN) is an assessment without
a value whose rationale says why: the scorer's own reason, or that the
case lacks what the scorer reads (an unanswerable question has no expected structured
answer); an empty text (no citations) is no assessment. The trace then says why a cell of
the evaluation view is empty.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from ragtrack.core.redact import redact_text
from ragtrack.core.types import ContextChunk, EvalCase, RunResult, ScoreValue

__all__ = ["RATIONALE_COLUMNS", "CaseAssessment", "CaseTrace", "case_traces"]

RATIONALE_COLUMNS = frozenset({"error", "reason", "rationale"})


class CaseAssessment(BaseModel):
    """One per-case column of one scorer: `name` is `<scorer>/<column>`, `source` `<scorer>@<version>`."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float | int | bool | str | None  # None: not computed for this case; `rationale` says why
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


def _not_scored(scorer: str, case: EvalCase) -> str:
    """Why `scorer` has no value for `case`, when the scorer gave no reason of its own."""
    from ragtrack.scorers.base import SCORERS, SECTION_FORMATS

    section = SCORERS.get(scorer).section if scorer in SCORERS.names() else None
    if section is not None and getattr(case, section) is None:
        return (
            f"not scored: {scorer} scores {SECTION_FORMATS[section]} cases (with `{section}`), "
            "and this case has none"
        )
    return f"not computed for this case by {scorer}"


def case_traces(result: RunResult) -> list[CaseTrace]:
    """One `CaseTrace` per scored case, in case order."""
    by_case: dict[str, list[CaseAssessment]] = {c.id: [] for c in result.eval_set.cases}
    for out in result.outputs:
        name, source = out.info.name, f"{out.info.name}@{out.info.version}"
        scored = dict(out.rows())
        columns = [
            k
            for k, column in out.columns.items()
            if k.rpartition("/")[2] not in RATIONALE_COLUMNS and any(map(_assessable, column))
        ]
        for case in result.eval_set.cases:
            values = scored.get(case.id, {})
            reasons = [
                str(v)
                for k, v in values.items()
                if k.rpartition("/")[2] in RATIONALE_COLUMNS and _assessable(v)
            ]
            rationale = redact_text("; ".join(reasons)) if reasons else None
            why = None
            for k in columns:
                v = values.get(k)
                if v == "":  # an empty text (no citations): a value, shown as no assessment
                    continue
                if not _assessable(v):
                    v, why = None, why or rationale or _not_scored(name, case)
                by_case[case.id].append(
                    CaseAssessment(
                        name=k,
                        value=v,
                        source=source,
                        rationale=rationale if v is not None else why,
                    )
                )
    return [
        CaseTrace(
            case_id=case.id,
            question=case.question,
            answer=pred.answer,
            contexts=pred.contexts,
            latency_ms=pred.latency_ms,
            assessments=by_case[case.id],
        )
        for case, pred in zip(result.eval_set.cases, result.generation.predictions, strict=True)
    ]

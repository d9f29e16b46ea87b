"""Per-case result rows: one row per case, the scorers' columns side by side.

The same rows feed `ragtrack score --json`, the Parquet artifact and the MLflow table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtrack.core.types import EvalCase, Prediction, RunResult, ScorerOutput, ScoreValue

if TYPE_CHECKING:
    import pandas

__all__ = ["case_rows", "cases_frame"]


def case_rows(
    cases: Sequence[EvalCase], predictions: Sequence[Prediction], outputs: Sequence[ScorerOutput]
) -> list[dict[str, ScoreValue]]:
    """`id`, `question`, the prediction's basics, then every scorer's `<scorer>/<column>`."""
    by_case: dict[str, dict[str, ScoreValue]] = {}
    for case, pred in zip(cases, predictions, strict=True):
        by_case[case.id] = {
            "id": case.id,
            "question": case.question,
            "answer": pred.answer,
            "missing": pred.missing,
            "n_contexts": len(pred.contexts),
            "latency_ms": pred.latency_ms,
        }
    columns: list[str] = []
    for out in outputs:
        for cs in out.cases:
            for key in cs.values:
                if key not in columns:
                    columns.append(key)
            by_case[cs.case_id].update(cs.values)
    rows = list(by_case.values())
    for row in rows:  # every row has every column: a scorer that skipped a case leaves None
        for key in columns:
            row.setdefault(key, None)
    return rows


def cases_frame(result: RunResult) -> pandas.DataFrame:
    import pandas as pd

    return pd.DataFrame(case_rows(result.eval_set.cases, result.generation.predictions, result.outputs))

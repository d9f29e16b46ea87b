"""The per-case table: by rows (`ragtrack score --json`) and by columns (`cases.parquet`)."""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragtrack.core.types import ComponentInfo, EvalCase, Gold, Prediction, ScorerOutput, ScoreValue
from ragtrack.inputs.eval_sets import load_eval_set
from ragtrack.inputs.predictions import match_prediction_file
from ragtrack.run.results import case_columns, case_rows, head_frame, write_parquet
from ragtrack.scorers import Batch, build_scorer

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo"


def _out(name: str, ids: list[str], **columns: list[ScoreValue]) -> ScorerOutput:
    info = ComponentInfo(name=name, version="1", params={})
    return ScorerOutput(
        info=info, ids=ids, columns={f"{name}/{k}": v for k, v in columns.items()}, metrics={}
    )


CASES = [EvalCase(id=i, question=f"q {i}", gold=Gold(answerable=True)) for i in ("a", "b", "c")]
PREDS = [Prediction(case_id="a", answer="x"), Prediction(case_id="b", missing=True), Prediction(case_id="c")]
# `first` skips the first case, `all` scores every case: the first row lists `all` first
OUTPUTS = [
    _out("first", ["b", "c"], flag=[True, None], score=[1.0, 0.5]),
    _out("all", ["a", "b", "c"], label=["x", None, "y"], n=[1, 2, 3]),
]


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def test_columns_make_the_same_parquet_as_rows() -> None:
    by_rows = pd.DataFrame(case_rows(CASES, PREDS, OUTPUTS))
    by_columns = pd.DataFrame(case_columns(CASES, PREDS, OUTPUTS))
    assert _parquet(by_columns) == _parquet(by_rows)


def test_column_order_is_the_first_rows() -> None:
    assert list(case_columns(CASES, PREDS, OUTPUTS)) == list(case_rows(CASES, PREDS, OUTPUTS)[0])


def test_a_skipped_case_is_none() -> None:
    assert case_columns(CASES, PREDS, OUTPUTS)["first/score"] == [None, 1.0, 0.5]


def test_real_scorers_columns_equal_rows() -> None:
    es, _ = load_eval_set([DEMO / "questions.json", DEMO / "qaset.json"])
    preds = match_prediction_file(next((DEMO / "predictions").glob("*.jsonl")), es.cases).predictions
    batch = Batch(cases=list(es.cases), predictions=list(preds))
    outputs = [build_scorer(name).score(batch) for name in ("refusal_citation", "eval_json_v2")]
    by_rows = pd.DataFrame(case_rows(es.cases, preds, outputs))
    assert _parquet(pd.DataFrame(case_columns(es.cases, preds, outputs))) == _parquet(by_rows)


KINDS = {"int": 3, "float": 0.25, "nan": math.nan, "bool": True, "str": "x", "none": None}


def _read(write: Callable[[Path], None], path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    write(path)
    return pd.read_parquet(path), pq.read_schema(path).pandas_metadata


@pytest.mark.parametrize(
    "kinds",
    [c for r in range(1, 4) for c in itertools.combinations(KINDS, r)],
    ids="-".join,
)
def test_row_groups_read_back_as_the_whole_frame(kinds: tuple[str, ...], tmp_path: Path) -> None:
    # gaps first, so the first row group of a typed column holds none of its values
    column = [None, None] + [KINDS[k] for k in kinds] * 2
    columns: dict[str, list[Any]] = {"id": [str(i) for i in range(len(column))], "value": column}
    try:
        want = _read(lambda p: pd.DataFrame(columns).to_parquet(p, index=False), tmp_path / "whole.parquet")
    except (pa.ArrowException, ValueError):  # no Parquet type for this mix: neither writes it
        with pytest.raises((pa.ArrowException, ValueError)):
            write_parquet(columns, tmp_path / "parts.parquet", rows=2)
        return
    got = _read(lambda p: write_parquet(columns, p, rows=2), tmp_path / "parts.parquet")
    pd.testing.assert_frame_equal(got[0], want[0])
    assert got[1] == want[1]


def test_row_groups_hold_the_given_rows(tmp_path: Path) -> None:
    columns: dict[str, list[Any]] = {"id": [str(i) for i in range(5)], "score": [0.5, None, 1.0, 0.0, 1.0]}
    write_parquet(columns, tmp_path / "t.parquet", rows=2)
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups == 3


def test_head_frame_is_the_whole_frames_head() -> None:
    columns: dict[str, list[Any]] = {
        "id": ["a", "b", "c"],
        "score": [None, None, 0.5],
        "ok": [None, True, None],
    }
    pd.testing.assert_frame_equal(head_frame(columns, 2), pd.DataFrame(columns).head(2))

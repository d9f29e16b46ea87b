"""Per-case results: one row per case, the scorers' columns side by side.

The same table feeds `ragtrack score --json` (as rows), the Parquet artifact and the MLflow
table (as columns: a 100,000-case run builds a few lists, not a dict per case).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtrack.core.types import EvalCase, Prediction, RunResult, ScorerOutput, ScoreValue
from ragtrack.inputs.predictions import case_keys

if TYPE_CHECKING:
    import pandas

__all__ = ["PARQUET_ROWS", "case_columns", "case_rows", "cases_frame", "head_frame", "write_parquet"]

# rows per Parquet row group: the table is converted to Arrow one group at a time
PARQUET_ROWS = 10_000


# the columns every case has, before the scorers' columns
BASICS = ("id", "question", "answer", "missing", "n_contexts", "latency_ms")


def _basics(case: EvalCase, pred: Prediction) -> dict[str, ScoreValue]:
    return {
        "id": case.id,
        "question": case.question,
        "answer": pred.answer,
        "missing": pred.missing,
        "n_contexts": len(pred.contexts),
        "latency_ms": pred.latency_ms,
    }


def case_rows(
    cases: Sequence[EvalCase], predictions: Sequence[Prediction], outputs: Sequence[ScorerOutput]
) -> list[dict[str, ScoreValue]]:
    """`id`, `question`, the prediction's basics, then every scorer's `<scorer>/<column>`."""
    by_case = {case.id: _basics(case, pred) for case, pred in zip(cases, predictions, strict=True)}
    columns: list[str] = []
    for out in outputs:
        columns += [k for k in out.columns if k not in columns]
        for case_id, values in out.rows():
            by_case[case_id].update(values)
    rows = list(by_case.values())
    for row in rows:  # every row has every column: a scorer that skipped a case leaves None
        for key in columns:
            row.setdefault(key, None)
    return rows


def case_columns(
    cases: Sequence[EvalCase], predictions: Sequence[Prediction], outputs: Sequence[ScorerOutput]
) -> dict[str, list[ScoreValue]]:
    """`case_rows` by column, in the order a table of those rows has them (the first row's keys).

    A scorer's column holds None for each case the scorer skipped.
    """
    keys = case_keys(cases)  # from the spool's memo: the cases are not read again
    if len(keys) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(keys)} cases")
    table: dict[str, list[ScoreValue]] = {k: [] for k in BASICS}
    ids, question, answer, missing, n_contexts, latency = table.values()
    ids += [case_id for case_id, _ in keys]
    question += [text for _, text in keys]
    for pred in predictions:  # one pass: they may be spooled
        answer.append(pred.answer)
        missing.append(pred.missing)
        n_contexts.append(len(pred.contexts))
        latency.append(pred.latency_ms)
    # the first row has the columns of the scorers that scored the first case first
    first = ids[0] if ids else None
    position: dict[ScoreValue, int] | None = None
    for out in sorted(outputs, key=lambda out: not (out.ids and out.ids[0] == first)):
        if out.ids == ids:
            table.update(out.columns)
            continue
        position = position or {case_id: i for i, case_id in enumerate(ids)}
        at = [position[case_id] for case_id in out.ids]
        for key, column in out.columns.items():
            full: list[ScoreValue] = [None] * len(ids)
            for i, value in zip(at, column, strict=True):
                full[i] = value
            table[key] = full
    return table


def cases_frame(result: RunResult) -> pandas.DataFrame:
    """The per-case table as a DataFrame (`cases.parquet`)."""
    import pandas as pd

    return pd.DataFrame(case_columns(result.eval_set.cases, result.generation.predictions, result.outputs))


def _kind(value: object) -> type | None:
    """The Python type pandas infers a column's dtype from (bool before int: bools are ints)."""
    if value is None:
        return None
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind
    return object


def _first_of_each_kind(column: Sequence[Any]) -> dict[type | None, Any]:
    """The first value of each type (`_kind`) the column holds, read in one pass."""
    picked: dict[type | None, Any] = {}
    for value in column:
        picked.setdefault(_kind(value), value)
    return picked


def _dtype(kinds: Collection[type | None]) -> Any:
    """The dtype `pandas.DataFrame` gives a column holding values of `kinds` (`_kind`); None for a mix this
    does not know (the caller then builds the whole frame, as pandas would)."""
    import pandas as pd

    kinds = set(kinds)
    if kinds and kinds <= {int, float, None} and kinds & {int, float} and kinds != {int}:
        return pd.Series([0.5]).dtype  # numbers with a gap or a float: float64
    if kinds == {int}:
        return pd.Series([1]).dtype
    if kinds == {bool}:
        return pd.Series([True]).dtype
    if str in kinds and kinds <= {str, None}:
        return pd.Series(["x"]).dtype
    if kinds <= {bool, None}:
        return "object"  # flags with gaps, or only gaps
    return None


def _part(
    columns: dict[str, list[ScoreValue]], dtypes: dict[str, Any], start: int, stop: int
) -> pandas.DataFrame:
    """Rows `start:stop` of the table, each column with the dtype of its whole."""
    import pandas as pd

    return pd.DataFrame({k: pd.Series(c[start:stop], dtype=dtypes[k]) for k, c in columns.items()})


def head_frame(columns: dict[str, list[ScoreValue]], n: int) -> pandas.DataFrame:
    """`DataFrame(columns).head(n)`, without building the rest of the frame."""
    import pandas as pd

    dtypes = {k: _dtype(_first_of_each_kind(column)) for k, column in columns.items()}
    if any(d is None for d in dtypes.values()):
        return pd.DataFrame(columns).head(n)
    return _part(columns, dtypes, 0, n)


def write_parquet(columns: dict[str, list[ScoreValue]], path: str | Path, rows: int = PARQUET_ROWS) -> None:
    """Write the per-case table (`case_columns`) to Parquet, `rows` rows at a time.

    Each row group is built with the dtype pandas gives the whole column and the whole
    table's Arrow schema, so `pandas.read_parquet` returns what `DataFrame(columns)` is:
    the same columns, dtypes and values, without ever holding the whole table in Arrow.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = len(next(iter(columns.values()), []))
    picked = {k: _first_of_each_kind(column) for k, column in columns.items()}  # one pass per column
    dtypes = {k: _dtype(kinds) for k, kinds in picked.items()}
    if n <= rows or any(d is None for d in dtypes.values()):
        pd.DataFrame(columns).to_parquet(path, index=False)
        return
    # one value of each type a column holds is enough for Arrow to type it as the whole
    width = max(map(len, picked.values()))
    sample = pd.DataFrame(
        {k: pd.Series((list(p.values()) * width)[:width], dtype=dtypes[k]) for k, p in picked.items()}
    )
    schema = pa.Schema.from_pandas(sample, preserve_index=False)
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, n, rows):
            writer.write_table(_arrow_part(columns, dtypes, schema, start, start + rows))


def _arrow_part(
    columns: dict[str, list[ScoreValue]], dtypes: dict[str, Any], schema: Any, start: int, stop: int
) -> Any:
    """Rows `start:stop` as an Arrow table of `schema`, converted as `pyarrow.Table.from_pandas` converts
    the whole frame.

    Text goes to Arrow as UTF-8 bytes encoded here: Arrow reading a `str` itself makes
    Python keep a UTF-8 copy inside every string object, as large as the text again, for as
    long as the string lives.
    """
    import pandas as pd
    import pyarrow as pa

    text = pd.Series(["x"]).dtype
    arrays = []
    for field in schema:
        column, dtype = columns[field.name][start:stop], dtypes[field.name]
        if dtype == text:
            encoded = [None if v is None else str(v).encode() for v in column]
            arrays.append(pa.array(encoded, type=field.type))
        else:
            arrays.append(pa.Array.from_pandas(pd.Series(column, dtype=dtype), type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)

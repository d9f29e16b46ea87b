"""The scorer interface and registry.

A scorer is a class registered under a name and a version, and names the case section it
reads (`section`: `expected`, `gold` or `reference`). It is built from keyword
parameters (all logged), scores a whole batch of cases at once and returns one
`ScorerOutput`; a `chunked` scorer can also be fed a large eval set a chunk at a time
(`begin`, `add`, `finish`) with the same result. It never raises on malformed model
output: it records the problem in a per-case `<name>/error` column instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.registry import Component, Params, Registry
from ragtrack.core.types import (
    ComponentInfo,
    EvalCase,
    EvalFormat,
    EvalSet,
    Generation,
    Prediction,
    ScorerOutput,
    ScoreValue,
)

__all__ = [
    "SCORERS",
    "SECTION_FORMATS",
    "Batch",
    "CaseColumns",
    "CaseTerms",
    "ScoreTable",
    "Scorer",
    "ScorerParams",
    "Section",
    "build_scorer",
    "check_applicable",
    "get_scorer_class",
    "mean_or_nan",
    "mean_terms",
    "present",
    "register_scorer",
    "scorer_names",
]


class Batch(BaseModel):
    """What every scorer receives: cases and their predictions, aligned by position."""

    model_config = ConfigDict(frozen=True)

    cases: list[EvalCase]
    predictions: list[Prediction]
    n_unmatched: int = 0
    duplicates_dropped: int = 0

    @classmethod
    def from_generation(cls, cases: Sequence[EvalCase], generation: Generation) -> Batch:
        return cls(
            cases=list(cases),
            predictions=list(generation.predictions),
            n_unmatched=generation.n_unmatched,
            duplicates_dropped=generation.duplicates_dropped,
        )


ScorerParams = Params  # every scorer's parameter model derives from this


# The EvalCase section a scorer reads, and the eval-set format whose items carry it.
Section = Literal["expected", "gold", "reference"]
SECTION_FORMATS: dict[str, EvalFormat] = {"expected": "question_v2", "gold": "qaset", "reference": "rag"}


CaseColumns = Mapping[
    str, Sequence[ScoreValue]
]  # per-case columns by name, as in `cases.parquet` (one value per case)


class ScoreTable:
    """A scorer's per-case columns as it fills them, one case at a time (see `ScorerOutput`).

    A key a case does not give is None in that case's row, as in `cases.parquet`.
    """

    __slots__ = ("ids", "columns")

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.columns: dict[str, list[ScoreValue]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, case_id: str, values: Mapping[str, ScoreValue]) -> None:
        """Append one case's columns."""
        n = len(self.ids)
        for key, value in values.items():
            column = self.columns.get(key)
            if column is None:
                column = self.columns[key] = [None] * n
            column.append(value)
        self.ids.append(case_id)
        if len(values) != len(self.columns):
            for column in self.columns.values():
                if len(column) == n:
                    column.append(None)

    def column(self, key: str) -> list[ScoreValue]:
        """Column `key`, one value per case (empty when no case gave it)."""
        return self.columns.get(key, [])

    def row(self, i: int) -> dict[str, ScoreValue]:
        """The `i`-th case's columns."""
        return {k: column[i] for k, column in self.columns.items()}

    def output(self, info: ComponentInfo, metrics: dict[str, float], report_md: str) -> ScorerOutput:
        return ScorerOutput(
            info=info, ids=self.ids, columns=self.columns, metrics=metrics, report_md=report_md
        )


class CaseTerms(BaseModel):
    """An aggregate metric written as per-case terms: `metric = Σ num / Σ den` (`empty` when `Σ den` is 0).

    A case with `den` 0 does not count toward the metric (its scorer skipped it, or it
    lies outside the metric's denominator, e.g. an unanswerable question for
    over-refusal). `binary`: every counted case's `num` is 0 or 1, a pass/fail flag.
    This is what lets `ragtrack compare` resample cases (paired bootstrap), pair pass/fail
    flags (McNemar) and name the cases that moved, for any scorer that declares its terms.
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    num: list[float]
    den: list[float]
    binary: bool = False
    higher_is_better: bool = True
    empty: float = math.nan

    @property
    def value(self) -> float:
        """The metric: `Σ num / Σ den` with `math.fsum` (bit for bit the logged value), `empty` when `Σ den`
        is 0."""
        den = math.fsum(self.den)
        return math.fsum(self.num) / den if den else self.empty


def present(v: ScoreValue) -> bool:
    """A per-case value that was computed: not None (scorer skipped the case) and not NaN."""
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def mean_terms(
    metric: str, values: Sequence[ScoreValue], *, binary: bool = False, higher_is_better: bool = True
) -> CaseTerms:
    """Terms of a plain mean over the cases that have a value (`mean_or_nan` of a column)."""
    return CaseTerms(
        metric=metric,
        num=[float(v) if present(v) else 0.0 for v in values],  # type: ignore[arg-type]
        den=[1.0 if present(v) else 0.0 for v in values],
        binary=binary,
        higher_is_better=higher_is_better,
    )


class Scorer(Component):
    """Base class: subclasses set `name`, `version`, `section`, `Params` and implement `score`.

    `section` names the `EvalCase` field the scorer reads (`expected`, `gold` or
    `reference`); `None` means it needs no ground truth and applies to every case.
    """

    kind: ClassVar[str] = "scorers"
    section: ClassVar[Section | None] = None
    # the metric that sums the scorer up (its overall figure), if it has one
    headline: ClassVar[str | None] = None
    # scores a large eval set a chunk at a time (`begin`, `add` per chunk, `finish`), with the same result
    chunked: ClassVar[bool] = False

    def score(self, batch: Batch) -> ScorerOutput:
        """Score every case of the batch this scorer applies to (a scorer that is not `chunked` overrides
        this)."""
        state = self.begin()
        self.add(state, batch)
        return self.finish(state)

    def begin(self) -> Any:
        """A chunked scorer's state before its first chunk."""
        raise NotImplementedError(f"scorer {self.name!r} scores whole batches")

    def add(self, state: Any, batch: Batch) -> None:
        """Score one chunk (every chunk carries the eval set's `n_unmatched` and `duplicates_dropped`)."""
        raise NotImplementedError(f"scorer {self.name!r} scores whole batches")

    def finish(self, state: Any) -> ScorerOutput:
        """The output for every chunk added: bit for bit what `score` gives for them as one batch."""
        raise NotImplementedError(f"scorer {self.name!r} scores whole batches")

    @classmethod
    def case_terms(cls, columns: CaseColumns) -> list[CaseTerms]:
        """Each aggregate metric that is a ratio of per-case sums, from this scorer's per-case columns.

        Each metric states its direction here (`higher_is_better`), next to its definition.
        `Σ num / Σ den` must equal the logged metric bit for bit. A scorer whose metrics
        are not such ratios returns none: they are then compared run to run, not case by case.
        """
        return []


def check_applicable(scorers: Sequence[Scorer], eval_set: EvalSet) -> None:
    """Raise `InputError` for the first scorer that applies to none of the eval set's cases.

    A scorer applies to a case that carries its `section`; one that applies to none
    would only produce NaN, so asking for it is an error naming the scorer, what it
    needs and the eval-set files (with their formats), before any work is done.
    """
    for s in scorers:
        if s.section is None or any(getattr(c, s.section) is not None for c in eval_set.cases):
            continue
        files = ", ".join(f"{f.path} ({f.format})" for f in eval_set.files)
        raise InputError(
            "scorers",
            f"needs {SECTION_FORMATS[s.section]} items (with `{s.section}`), and no case of the eval set "
            f"has them; eval-set files: {files}",
            field=s.name,
        )


SCORERS: Registry[Scorer] = Registry(
    "scorers",
    {
        name: f"ragtrack.scorers.{name}"
        for name in ("earag", "eval_json_v2", "rag", "refusal_citation", "rubric_judge")
    },
)
register_scorer = SCORERS.register
scorer_names = SCORERS.names
get_scorer_class = SCORERS.get
build_scorer = SCORERS.build


def mean_or_nan(values: Sequence[float]) -> float:
    """Mean via `math.fsum` (correctly rounded, so bit-identical run to run); NaN when empty."""
    return math.fsum(values) / len(values) if values else math.nan

"""The scorer interface and registry.

A scorer is a class registered under a name and a version. It is built from keyword
parameters (all logged), scores a whole batch of cases at once and returns one
`ScorerOutput`. It never raises on malformed model output: it records the problem in a
per-case `<name>/error` column instead.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from ragtrack.registry import Component, Params, Registry
from ragtrack.types import EvalCase, Generation, Prediction, ScorerOutput

__all__ = ["SCORERS", "Batch", "Scorer", "ScorerParams", "build_scorer", "get_scorer_class", "mean_or_nan", "register_scorer", "scorer_names"]


class Batch(BaseModel):
    """What every scorer receives: cases and their predictions, aligned by position."""

    model_config = ConfigDict(frozen=True)

    cases: list[EvalCase]
    predictions: list[Prediction]
    n_unmatched: int = 0
    duplicates_dropped: int = 0

    @classmethod
    def from_generation(cls, cases: Sequence[EvalCase], generation: Generation) -> "Batch":
        return cls(
            cases=list(cases),
            predictions=generation.predictions,
            n_unmatched=generation.n_unmatched,
            duplicates_dropped=generation.duplicates_dropped,
        )


ScorerParams = Params  # every scorer's parameter model derives from this


class Scorer(Component):
    """Base class: subclasses set `name`, `version`, `Params` and implement `score`."""

    kind: ClassVar[str] = "scorers"

    @abstractmethod
    def score(self, batch: Batch) -> ScorerOutput:
        """Score every case of the batch this scorer applies to."""


def _load_builtin() -> None:
    # Importing the modules runs their @register_scorer decorators.
    from ragtrack.scorers import eval_json_v2, refusal_citation  # noqa: F401


SCORERS: Registry[Scorer] = Registry("scorers", _load_builtin)
register_scorer = SCORERS.register
scorer_names = SCORERS.names
get_scorer_class = SCORERS.get
build_scorer = SCORERS.build


def mean_or_nan(values: Sequence[float]) -> float:
    """Mean via `math.fsum` (correctly rounded, so bit-identical run to run); NaN when empty."""
    return math.fsum(values) / len(values) if values else math.nan



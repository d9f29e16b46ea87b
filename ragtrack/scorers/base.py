"""The scorer interface and registry.

A scorer is a class registered under a name and a version. It is built from keyword
parameters (all logged), scores a whole batch of cases at once and returns one
`ScorerOutput`. It never raises on malformed model output: it records the problem in a
per-case `<name>/error` column instead.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.errors import InputError
from ragtrack.types import EvalCase, Generation, Prediction, ComponentInfo, ScorerOutput

__all__ = ["Batch", "Scorer", "ScorerParams", "build_scorer", "get_scorer_class", "mean_or_nan", "register_scorer", "scorer_names"]


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


class ScorerParams(BaseModel):
    """Base of every scorer's parameter model: unknown keys are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Scorer(ABC):
    """Base class: subclasses set `name`, `version`, `Params` and implement `score`."""

    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[ScorerParams]] = ScorerParams

    def __init__(self, **params: Any) -> None:
        try:
            self.p = self.Params.model_validate(params)
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            raise InputError(f"scorers.{self.name}", first["msg"], field=field) from None

    @property
    def info(self) -> ComponentInfo:
        """Name, version and every parameter (defaults included), as logged."""
        return ComponentInfo(name=self.name, version=self.version, params=self.p.model_dump())

    @abstractmethod
    def score(self, batch: Batch) -> ScorerOutput:
        """Score every case of the batch this scorer applies to."""


_REGISTRY: dict[str, type[Scorer]] = {}


def register_scorer(cls: type[Scorer]) -> type[Scorer]:
    """Class decorator: make a scorer available by its `name`."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"scorer {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin() -> None:
    # Importing the modules runs their @register_scorer decorators.
    from ragtrack.scorers import eval_json_v2, refusal_citation  # noqa: F401


def scorer_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_scorer_class(name: str) -> type[Scorer]:
    _load_builtin()
    if name not in _REGISTRY:
        raise InputError("scorers", f"unknown scorer; known: {', '.join(sorted(_REGISTRY))}", field=name)
    return _REGISTRY[name]


def build_scorer(name: str, params: dict[str, Any] | None = None) -> Scorer:
    """Instantiate a registered scorer; unknown parameters are an error."""
    return get_scorer_class(name)(**(params or {}))


def mean_or_nan(values: Sequence[float]) -> float:
    """Mean via `math.fsum` (correctly rounded, so bit-identical run to run); NaN when empty."""
    return math.fsum(values) / len(values) if values else math.nan



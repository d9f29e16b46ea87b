"""The generator interface and registry.

A generator turns a batch of cases into one `Prediction` per case (a `Generation`). It
is registered under a name and a version; its parameters are validated and logged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.errors import InputError
from ragtrack.types import EvalCase, Generation, ComponentInfo

__all__ = ["Generator", "GeneratorParams", "build_generator", "get_generator_class", "generator_names", "register_generator"]


class GeneratorParams(BaseModel):
    """Base of every generator's parameter model: unknown keys are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Generator(ABC):
    """Base class: subclasses set `name`, `version`, `Params` and implement `generate`."""

    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[GeneratorParams]] = GeneratorParams

    def __init__(self, **params: Any) -> None:
        try:
            self.p = self.Params.model_validate(params)
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            raise InputError(f"generator.{self.name}", first["msg"], field=field) from None

    @property
    def info(self) -> ComponentInfo:
        """Name, version and parameters, as logged."""
        return ComponentInfo(name=self.name, version=self.version, params=self.p.model_dump())

    @abstractmethod
    def generate(self, cases: Sequence[EvalCase], prompt_template: str) -> Generation:
        """One prediction per case, in case order."""


_REGISTRY: dict[str, type[Generator]] = {}


def register_generator(cls: type[Generator]) -> type[Generator]:
    """Class decorator: make a generator available by its `name`."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"generator {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin() -> None:
    from ragtrack.generators import callable_fn, replay  # noqa: F401


def generator_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_generator_class(name: str) -> type[Generator]:
    _load_builtin()
    if name not in _REGISTRY:
        raise InputError("generator.name", f"unknown generator {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def build_generator(name: str, params: dict[str, Any] | None = None) -> Generator:
    """Instantiate a registered generator; unknown parameters are an error."""
    return get_generator_class(name)(**(params or {}))

"""Named, versioned components (scorers, generators) and the registries that find them.

A component class declares `name`, `version` and a pydantic `Params` model; building one
validates its parameters (unknown keys are an error naming the key), and `info` is what
gets logged: name, version and every parameter, defaults included.
"""

from __future__ import annotations

import inspect
import sys
from abc import ABC
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.errors import InputError
from ragtrack.hashing import sha256_bytes
from ragtrack.types import ComponentInfo

__all__ = ["Component", "Params", "Registry", "code_sha256"]


@cache
def code_sha256(cls: type) -> str:
    """sha256 of the source of the module that defines `cls` (its file's bytes).

    Logged with every run (`scorer/<name>/code_sha256`), so that an audit can tell whether
    the installed code of a component is the code that produced a score.
    """
    module = sys.modules[cls.__module__]
    try:
        return sha256_bytes(Path(inspect.getfile(module)).read_bytes())
    except (OSError, TypeError):  # no source file (e.g. defined interactively): the source inspect can find
        return sha256_bytes(inspect.getsource(module).encode("utf-8"))


class Params(BaseModel):
    """Base of every component's parameter model: frozen, unknown keys are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Component(ABC):
    """Base of scorers and generators: validated parameters and a loggable identity."""

    kind: ClassVar[str] = "component"  # "scorers" or "generator": names the config section in errors
    name: ClassVar[str]
    version: ClassVar[str]
    Params: ClassVar[type[Params]] = Params

    def __init__(self, **params: Any) -> None:
        try:
            self.p = self.Params.model_validate(params)
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            raise InputError(f"{self.kind}.{self.name}", first["msg"], field=field) from None

    @property
    def info(self) -> ComponentInfo:
        """Name, version and every parameter (defaults included), as logged."""
        return ComponentInfo(name=self.name, version=self.version, params=self.p.model_dump(), code_sha256=code_sha256(type(self)))


C = TypeVar("C", bound=Component)


class Registry(Generic[C]):
    """Component classes by name; `load_builtin` imports the modules that register the built-ins."""

    def __init__(self, kind: str, load_builtin: Callable[[], None]) -> None:
        self.kind = kind
        self._load_builtin = load_builtin
        self._classes: dict[str, type[C]] = {}

    def register(self, cls: type[C]) -> type[C]:
        """Class decorator: make a component available by its `name`."""
        if self._classes.get(cls.name, cls) is not cls:
            raise ValueError(f"{self.kind} {cls.name!r} is registered twice")
        self._classes[cls.name] = cls
        return cls

    def names(self) -> list[str]:
        self._load_builtin()
        return sorted(self._classes)

    def get(self, name: str) -> type[C]:
        self._load_builtin()
        if name not in self._classes:
            raise InputError(self.kind, f"unknown {self.kind.rstrip('s')} {name!r}; known: {', '.join(sorted(self._classes))}", field=name)
        return self._classes[name]

    def build(self, name: str, params: dict[str, Any] | None = None) -> C:
        """Instantiate a registered component; unknown parameters are an error."""
        return self.get(name)(**(params or {}))

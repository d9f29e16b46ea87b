"""Named, versioned components (scorers, generators) and the registries that find them.

A component class declares `name`, `version` and a pydantic `Params` model; building one
validates its parameters (unknown keys are an error naming the key), and `info` is what
gets logged: name, version and every parameter, defaults included.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
import threading
from abc import ABC
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_bytes
from ragtrack.core.types import ComponentInfo

__all__ = [
    "Component",
    "Params",
    "Reach",
    "Registry",
    "bytes_code_sha256",
    "code_modules",
    "code_sha256",
    "module_sha256",
    "reaching",
    "source_sha256",
]

# What a parameter makes the process touch outside itself (see `ragtrack.run.trust`):
# host: a server it calls; env: an environment variable whose value it sends; cache: a
# folder it writes (never a score's input); path: a file or folder it reads; model: a
# model it loads (a local folder, or a hub name it may download).
Reach = Literal["host", "env", "cache", "path", "model"]


def reaching(kind: Reach, default: Any = ..., **kwargs: Any) -> Any:
    """A parameter field that reaches outside the process (`Reach`): a value read from someone
    else's run is used only when the person running the command gives it (`ragtrack.run.trust`)."""
    return Field(default, json_schema_extra={"reach": kind}, **kwargs)


@cache
def code_sha256(cls: type) -> str:
    """sha256 of the code the component's behaviour comes from: the module defining `cls` and
    every module of its package it imports (`code_modules`), as sorted `module sha256` lines,
    each module hashed by its syntax tree without docstrings (`source_sha256`).

    Logged with every run (`scorer/<name>/code_sha256`), so that an audit can tell whether
    the installed code of a component is the code that produced a score, a change in a
    helper such as `text.py` or `facts.py` included; reformatting, comments and docstrings
    leave it unchanged.
    """
    return _hash_modules(cls, source_sha256)


def bytes_code_sha256(cls: type) -> str:
    """`code_sha256` over each module's bytes: the code hash of runs logged before 2026-11-25 (issue 19)."""
    return _hash_modules(cls, lambda path: sha256_bytes(path.read_bytes()))


# CPython 3.11's ast.parse is not safe in several threads at once ("AST constructor recursion depth
# mismatch", python/cpython#106905): MLflow's evaluation scores in threads, each asking for code hashes.
_PARSING = threading.Lock()


def _hash_modules(cls: type, digest: Callable[[Path], str]) -> str:
    with _PARSING:
        files = code_modules(cls.__module__)
        if not files:  # no source file (e.g. defined interactively): the source inspect can find
            return sha256_bytes(inspect.getsource(sys.modules[cls.__module__]).encode("utf-8"))
        lines = "".join(f"{name} {digest(path)}\n" for name, path in sorted(files.items()))
    return sha256_bytes(lines.encode())


def source_sha256(path: Path) -> str:
    """sha256 of a module's syntax tree (`ast.dump`, no positions) with its docstrings removed: the same
    for any formatting, comment or docstring, different for any change a program could notice."""
    tree = ast.parse(path.read_bytes(), str(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and (
                isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            )
        ):
            node.body = body[1:] or [ast.Pass()]
    return sha256_bytes(ast.dump(tree).encode("utf-8"))


def module_sha256(cls: type) -> str | None:
    """sha256 of the one file defining `cls`: the code hash runs logged before it covered imported modules."""
    path = _source(cls.__module__)
    return sha256_bytes(path.read_bytes()) if path is not None else None


def code_modules(module: str) -> dict[str, Path]:
    """`module` and, transitively, the modules of its top-level package it imports: every import
    in `module` itself (lazy ones too), the module-level imports of the others (a registry's
    lazy import of every built-in component is not a dependency). Module name -> source file."""
    package = module.partition(".")[0]
    found: dict[str, Path] = {}
    todo = [(module, False)]
    while todo:
        name, top_level_only = todo.pop()
        if name in found or (path := _source(name)) is None:
            continue
        found[name] = path
        tree = ast.parse(path.read_bytes(), str(path))
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in tree.body if top_level_only else ast.walk(tree):
            for imported in _imports(node, here):
                if imported == package or imported.startswith(package + "."):
                    todo.append((imported, True))
    return found


def _imports(node: ast.AST, here: str) -> list[str]:
    """The modules an import statement may load (`from a import b`: `a` and `a.b`, which may be a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = here.split(".")[: len(here.split(".")) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def _source(module: str) -> Path | None:
    """The source file of an importable module (its parent packages get imported); None for anything else."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # not a module (an attribute imported by name), or __main__
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


class Params(BaseModel):
    """Base of every component's parameter model: frozen, unknown keys are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def idle(cls, raw: Mapping[str, Any]) -> frozenset[str]:
        """The fields a component configured with `raw` never reads (a block of another backend): what they
        would reach outside the process is never reached, so `run.trust` leaves them unsettled."""
        return frozenset()


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
        return ComponentInfo(
            name=self.name,
            version=self.version,
            params=self.p.model_dump(),
            code_sha256=code_sha256(type(self)),
        )


C = TypeVar("C", bound=Component)


class Registry(Generic[C]):
    """Component classes by name. A built-in's module (`builtins`: name -> module) is imported when the
    component is first asked for, so a command pays only for the components it uses."""

    def __init__(self, kind: str, builtins: Mapping[str, str]) -> None:
        self.kind = kind
        self._builtins = dict(builtins)
        self._classes: dict[str, type[C]] = {}

    def register(self, cls: type[C]) -> type[C]:
        """Class decorator: make a component available by its `name`."""
        if self._classes.get(cls.name, cls) is not cls:
            raise ValueError(f"{self.kind} {cls.name!r} is registered twice")
        self._classes[cls.name] = cls
        return cls

    def names(self) -> list[str]:
        return sorted({*self._builtins, *self._classes})

    def get(self, name: str) -> type[C]:
        if name not in self._classes and name in self._builtins:
            importlib.import_module(self._builtins[name])  # runs its registering decorator
        if name not in self._classes:
            raise InputError(
                self.kind,
                f"unknown {self.kind.rstrip('s')} {name!r}; known: {', '.join(self.names())}",
                field=name,
            )
        return self._classes[name]

    def build(self, name: str, params: dict[str, Any] | None = None) -> C:
        """Instantiate a registered component; unknown parameters are an error."""
        return self.get(name)(**(params or {}))

"""The one error type for bad user input (it names the file, the item or line, and the field), and a run the store lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["InputError", "RunNotEnded"]


class InputError(ValueError):
    """Bad input file or config value.

    The message reads `<file>: <where>: <field>: <problem>`, e.g.
    `data/qaset.json: item 3: gold_ids: expected a list of strings, got int`.
    """

    def __init__(self, file: str, problem: str, *, where: str | None = None, field: str | None = None):
        self.file = str(file)
        self.where = where
        self.field = field
        self.problem = problem
        parts = [self.file] + [p for p in (where, field) if p] + [problem]
        super().__init__(": ".join(parts))

    def __reduce__(self) -> tuple[Any, ...]:
        # The keyword-only arguments are not in `self.args`, so the default reduction
        # (`cls(*args)`) cannot rebuild the error across processes.
        return (_rebuild, (type(self), self.file, self.problem, self.where, self.field), self.__dict__)

    @classmethod
    def from_os_error(cls, path: str | Path, e: OSError, *, field: str | None = None) -> InputError:
        """`file not found`, or `cannot read: <strerror>` (a directory, no permission, ...)."""
        problem = "file not found" if isinstance(e, FileNotFoundError) else f"cannot read: {e.strerror or e}"
        return cls(str(path), problem, field=field)


class RunNotEnded(RuntimeError):
    """The tracking store stopped answering before a run could be ended: the run stays RUNNING
    until a later ragtrack command on that store, from this host, ends it KILLED (`tracking.reaper`)."""


def _rebuild(cls: type[InputError], file: str, problem: str, where: str | None, field: str | None) -> InputError:
    return cls(file, problem, where=where, field=field)

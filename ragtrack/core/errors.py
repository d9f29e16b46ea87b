"""The one error type for bad user input (it names the file, the item or line, and the field), a run the store
lost, and a full disk."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

__all__ = ["DiskFull", "InputError", "RunNotEnded", "disk_full", "human_bytes", "not_found", "run_fate"]

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
# How a full disk reads once a library has wrapped it: SQLite's SQLITE_FULL, and an OSError's text.
_FULL_TEXT = ("database or disk is full", "No space left on device", "Disk quota exceeded")


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
        """`file not found` (saying where a relative path was looked for), or `cannot read: <strerror>`."""
        problem = not_found(path) if isinstance(e, FileNotFoundError) else f"cannot read: {e.strerror or e}"
        return cls(str(path), problem, field=field)


def not_found(path: str | Path) -> str:
    """`file not found`, and for a relative path the folder it resolves against (ragtrack was started
    elsewhere?)."""
    return (
        "file not found"
        if Path(path).is_absolute()
        else f"file not found (relative paths resolve against {Path.cwd()})"
    )


class RunNotEnded(RuntimeError):
    """The tracking store stopped answering before a run could be ended: the run stays RUNNING
    until a later ragtrack command on that store, from this host, ends it KILLED (`tracking.reaper`)."""


def _rebuild(
    cls: type[InputError], file: str, problem: str, where: str | None, field: str | None
) -> InputError:
    return cls(file, problem, where=where, field=field)


class DiskFull(RuntimeError):
    """A write failed for want of space: where, how much is free there, and how much the step needs."""

    def __init__(self, path: str | Path, needed: int | None, free: int | None = None):
        self.path = Path(path)
        self.needed = needed
        self.free = _free(self.path) if free is None else free  # at the moment of the failure
        free_text = "unknown space" if self.free is None else human_bytes(self.free)
        need = f"needs about {human_bytes(needed)}" if needed else "needs more"
        super().__init__(
            f"disk full writing {self.path}: {free_text} free there, this step {need}; free some space and "
            "run again"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (DiskFull, (self.path, self.needed, self.free), self.__dict__)


def disk_full(e: BaseException, path: str | Path, needed: int | None) -> DiskFull | None:
    """`e` as `DiskFull` at `path` when it, or an error it wraps, is a full disk (ENOSPC, a quota,
    SQLITE_FULL).

    An `OSError` that names the file it was writing gives that file instead of `path`.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        err = todo.pop()
        if err is None or id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, DiskFull):
            return err
        if isinstance(err, OSError) and err.errno in _FULL_ERRNOS:  # a copy names its destination second
            return DiskFull(err.filename2 or err.filename or path, needed)
        if any(t in str(err) for t in _FULL_TEXT):
            return DiskFull(path, needed)
        todo += [
            err.__cause__,
            err.__context__,
            getattr(err, "orig", None),
        ]  # `orig`: SQLAlchemy's driver error
    return None


def human_bytes(n: int) -> str:
    """`512 B`, `3.4 KB`, `1.2 MB`, `5.0 GB` (powers of 1024)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _free(path: Path) -> int | None:
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return None


def run_fate(e: BaseException) -> str:
    """What became of a command's run: `run … ended FAILED|KILLED` (noted where it was ended, outermost
    last), or that no run exists."""
    notes = [n for n in getattr(e, "__notes__", ()) if n.startswith("run ")]
    return notes[-1] if notes else "no run was logged"

"""Shared MLflow entities a run finds or creates: versions (LoggedModels), prompt versions, evaluation
datasets.

Many jobs of a sweep need the same entity at once. `find_or_create` finds it, or creates
it, under one lock per process and, on SQLite, per store (a file beside it): MLflow writes
such an entity's tags apart from the entity, so two jobs that check at once can each miss
the other's. Against a server no lock is shared; there every job looks again after
creating, keeps the oldest and deletes its own if that is another, so all end on one.

These entities are extras on top of the run: `optional` turns a store that refuses them
(an older server, a store without the API) into one warning line, while a full disk stays
the run's one error.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar

from filelock import FileLock
from mlflow.exceptions import MlflowException

from ragtrack.core.errors import disk_full
from ragtrack.tracking.store import LOCK_TIMEOUT_S, sqlite_path

__all__ = ["creating_entities", "find_or_create", "optional"]

log = logging.getLogger("ragtrack")

T = TypeVar("T")
_lock = threading.Lock()


@contextmanager
def creating_entities(uri: str) -> Iterator[None]:
    """One find-or-create at a time per process and, on SQLite, per store."""
    db = sqlite_path(uri)
    with (
        _lock,
        FileLock(db.with_name(db.name + ".entities.lock"), timeout=LOCK_TIMEOUT_S) if db else nullcontext(),
    ):
        yield


def find_or_create(
    uri: str,
    find: Callable[[], Sequence[T]],
    create: Callable[[], T],
    key: Callable[[T], str],
    delete: Callable[[T], None],
) -> T:
    """The oldest entity `find` returns (it sorts oldest first), created when there is none; a job that
    created a duplicate deletes its own."""
    with creating_entities(uri):
        found = find()
        if found:
            return found[0]
        mine = create()
        keep = (find() or [mine])[0]
        if key(keep) != key(mine):  # another job created it first: use that one
            delete(mine)
        return keep


@contextmanager
def optional(what: str, refusals: tuple[type[BaseException], ...] = (MlflowException,)) -> Iterator[None]:
    """Run the block; a store that refuses it is one warning line (`<what> (the store refused: …)`), a full
    disk is raised."""
    try:
        yield
    except refusals as e:
        if disk_full(e, Path.cwd(), None) is not None:
            raise
        log.warning("%s (the store refused: %s)", what, (str(e).splitlines() or [type(e).__name__])[0])

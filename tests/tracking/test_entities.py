"""Finding or creating a shared MLflow entity: one per content whatever the timing, and a refusal is a
warning."""

from __future__ import annotations

import errno
import logging

import pytest
from mlflow.exceptions import MlflowException

from ragtrack.core.errors import DiskFull
from ragtrack.tracking.entities import find_or_create, optional


class Shelf:
    """A stand-in for a store's entities, oldest first; `early` is created by another job just before ours."""

    def __init__(self, early: str | None = None) -> None:
        self.items: list[str] = []
        self.early = early

    def find(self) -> list[str]:
        return list(self.items)

    def create(self) -> str:
        if self.early:
            self.items.append(self.early)
        self.items.append("mine")
        return "mine"

    def delete(self, item: str) -> None:
        self.items.remove(item)


def test_an_existing_entity_is_found_not_created(tmp_path):
    shelf = Shelf()
    shelf.items = ["old"]
    assert (
        find_or_create(f"sqlite:///{tmp_path}/mlflow.db", shelf.find, shelf.create, str, shelf.delete)
        == "old"
    )


def test_a_missing_entity_is_created():
    shelf = Shelf()
    assert find_or_create("http://127.0.0.1:1", shelf.find, shelf.create, str, shelf.delete) == "mine"


def test_a_job_that_created_a_duplicate_keeps_the_oldest_and_deletes_its_own():
    shelf = Shelf(early="theirs")
    assert find_or_create("http://127.0.0.1:1", shelf.find, shelf.create, str, shelf.delete) == "theirs"
    assert shelf.items == ["theirs"]


def test_a_store_that_refuses_an_entity_is_one_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="ragtrack"), optional("versions not logged"):
        raise MlflowException("API not found\nmore detail")
    assert [r.getMessage() for r in caplog.records] == [
        "versions not logged (the store refused: API not found)"
    ]


def test_a_full_disk_is_not_swallowed():
    with pytest.raises((DiskFull, OSError)), optional("versions not logged", (MlflowException, OSError)):
        raise OSError(errno.ENOSPC, "No space left on device")

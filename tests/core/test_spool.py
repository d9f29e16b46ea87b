"""The spool: a sequence in a temporary file, a chunk at a time in memory."""

from __future__ import annotations

import errno
import io
import pickle
import random
import tempfile
from typing import Any

import pytest
from pydantic import BaseModel

from ragtrack.core.errors import DiskFull
from ragtrack.core.spool import Spool, spooled
from ragtrack.core.types import EvalCase, Gold


def test_items_read_back_in_order_across_chunks() -> None:
    assert list(spooled(range(10), size=3, in_memory=0)) == list(range(10))


def test_items_put_in_any_order_come_back_by_position() -> None:
    order = list(range(25))
    random.Random(1).shuffle(order)
    spool: Spool[int] = Spool(size=4, in_memory=0)
    for position in order:
        spool.put(position, position * 10)
    assert list(spool.seal(25)) == [p * 10 for p in range(25)]


def test_resolve_sees_every_part_in_the_order_put() -> None:
    spool: Spool[tuple[str, ...]] = Spool(resolve=lambda p, parts: tuple(parts), size=2, in_memory=0)
    for position, part in [(0, "a"), (1, "b"), (0, "c"), (1, "d"), (0, "e")]:
        spool.put(position, part)
    assert list(spool.seal(2)) == [("a", "c", "e"), ("b", "d")]


def test_a_position_nothing_was_put_at_gets_the_stand_in() -> None:
    spool: Spool[str] = Spool(
        resolve=lambda p, parts: parts[-1] if parts else f"none {p}", size=2, in_memory=0
    )
    spool.put(2, "x")
    assert list(spool.seal(4)) == ["none 0", "none 1", "x", "none 3"]


def test_a_small_spool_stays_in_memory() -> None:
    spool = spooled(range(5), size=10)
    assert (spool._file, list(spool)) == (None, [0, 1, 2, 3, 4])


def test_a_large_spool_writes_every_chunk_to_its_file() -> None:
    spool = spooled(range(55), size=10, in_memory=20)
    assert (spool._file is not None, spool._waiting, list(spool)) == (True, {}, list(range(55)))


def test_indexing_and_slicing_like_a_list() -> None:
    spool, items = spooled(range(10), size=3, in_memory=0), list(range(10))
    assert (spool[4], spool[-1], spool[2:8], spool[-4:], spool[7:2], spool[2:8:2], spool[::-3]) == (
        items[4],
        items[-1],
        items[2:8],
        items[-4:],
        items[7:2],
        items[2:8:2],
        items[::-3],
    )


def test_an_index_past_the_end_raises() -> None:
    with pytest.raises(IndexError):
        spooled(range(3))[3]


def test_a_spooled_model_equals_the_one_put() -> None:
    case = EvalCase(id="a", question="q", gold=Gold(answerable=True))
    back = spooled([case] * 5, size=2, in_memory=0)[3]
    assert (back, back.model_fields_set, back.gold.model_fields_set) == (  # type: ignore[union-attr]
        case,
        case.model_fields_set,
        case.gold.model_fields_set,  # type: ignore[union-attr]
    )


class _Holder(BaseModel):
    items: Spool[int] | list[int]


def test_a_pydantic_field_keeps_the_spool_itself() -> None:
    spool = spooled(range(5), size=2, in_memory=0)
    assert _Holder(items=spool).items is spool


def test_a_dump_lists_the_items() -> None:
    assert _Holder(items=spooled(range(5), size=2)).model_dump() == {"items": [0, 1, 2, 3, 4]}


def test_pickling_sends_the_items() -> None:
    assert pickle.loads(pickle.dumps(spooled(range(7), size=2, in_memory=0))) == list(range(7))


def test_equal_to_a_list_of_the_same_items() -> None:
    assert (spooled(range(4), size=3) == [0, 1, 2, 3], spooled(range(4)) == [0, 1, 2]) == (True, False)


class _FullDisk(io.BytesIO):
    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_while_spooling_names_the_temporary_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: _FullDisk())
    with pytest.raises(DiskFull, match=f"disk full writing {tempfile.gettempdir()}"):
        spooled(range(10), size=2, in_memory=0)

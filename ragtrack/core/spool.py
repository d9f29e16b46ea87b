"""A sequence kept in a temporary file, one chunk of it in memory at a time.

A 100,000-case eval set held as objects costs ~4 KB per case and its predictions as much
again; spooled, the run holds one chunk. Items are `put` at their positions in any order
(a merged eval set's second file, predictions in the order a model wrote them). Up to
`in_memory` parts are simply kept: a set that small never touches the disk and costs
nothing to read. Beyond that, each part goes to the bucket of `size` positions it belongs
to, and buckets are written to an anonymous temporary file (gone when the spool is)
whenever `size` parts are waiting. Reading chunk `k` unpickles bucket `k` and resolves each
position from the parts put there, in the order they were put (`resolve`: the last part, a
merge, or a stand-in when none was put).

Iteration reads one chunk at a time; indexing keeps the last chunk read. Pickling is exact
(a pydantic model's fields and which of them were set), so a spooled item equals the one
put. The file has no name (it is unlinked when made), so what is unpickled is only ever what
this process wrote. A full disk while spooling is `DiskFull`, naming the temporary folder.
"""

from __future__ import annotations

import pickle
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, Generic, TypeVar, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from ragtrack.core.errors import disk_full

__all__ = ["CHUNK", "IN_MEMORY", "Spool", "last_part", "spooled"]

T = TypeVar("T")

CHUNK = 2_000  # items per chunk: ~15 MB of cases and predictions in memory at a time
IN_MEMORY = 20_000  # parts a spool keeps without writing them (~150 MB of cases and predictions)


def last_part(position: int, parts: list[Any]) -> Any:
    """The item put last at `position` (one was)."""
    return parts[-1]


class Spool(Sequence[T], Generic[T]):
    """`n` items by position, in a temporary file; see the module docstring."""

    def __init__(
        self,
        resolve: Callable[[int, list[Any]], T] = last_part,
        size: int | None = None,
        in_memory: int | None = None,
    ) -> None:
        """`size` and `in_memory` default to `CHUNK` and `IN_MEMORY` as they are when the spool is made."""
        self._resolve = resolve
        self.size = CHUNK if size is None else size
        self._in_memory = max(IN_MEMORY if in_memory is None else in_memory, self.size)
        self._file: IO[bytes] | None = None  # created by the first write
        self._blobs: list[list[tuple[int, int]]] = []  # per bucket: (offset, length) of each blob
        self._waiting: dict[int, list[tuple[int, Any]]] = {}  # bucket -> (position, part) not yet written
        self._n_waiting = 0
        self._n: int | None = None  # set by `seal`
        self._appended = 0
        self._cached: tuple[int, list[T]] | None = None
        # per position, what its producer chose to keep in memory (e.g. each case's id and question), so that
        # a reader needing only that does not read the items
        self.memo: list[Any] | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ writing

    def put(self, position: int, part: Any) -> None:
        """Record `part` for `position` (before `seal`)."""
        if self._n is not None:
            raise RuntimeError("the spool is sealed")
        self._waiting.setdefault(position // self.size, []).append((position, part))
        self._n_waiting += 1
        if self._n_waiting >= (self.size if self._file is not None else self._in_memory):
            self._flush()

    def append(self, part: Any) -> None:
        """`put` at the position after the last one appended."""
        self.put(self._appended, part)
        self._appended += 1

    def seal(self, n: int | None = None) -> Spool[T]:
        """End writing: the spool holds positions `0..n-1` (default: as many as were appended). A spool that
        wrote to its file writes the rest too; a small one keeps its parts in memory."""
        if self._file is not None:
            self._flush()
        self._n = self._appended if n is None else n
        self._blobs += [[] for _ in range(self.n_chunks - len(self._blobs))]
        return self

    def _flush(self) -> None:
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="ragtrack-spool-")
            f = self._file
            f.seek(0, 2)
            for bucket, parts in self._waiting.items():
                blob = pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
                self._blobs += [[] for _ in range(bucket + 1 - len(self._blobs))]
                self._blobs[bucket].append((f.tell(), len(blob)))
                f.write(blob)
        except OSError as e:
            full = disk_full(e, tempfile.gettempdir(), None)
            if full is None:
                raise
            raise full from e
        self._waiting.clear()
        self._n_waiting = 0

    # ------------------------------------------------------------------ reading

    def __len__(self) -> int:
        if self._n is None:
            raise RuntimeError("the spool is not sealed")
        return self._n

    @property
    def on_disk(self) -> bool:
        """Whether the items are in the file (a small spool keeps them in memory)."""
        return self._file is not None

    @property
    def n_chunks(self) -> int:
        return -(-len(self) // self.size)

    def chunk(self, k: int) -> list[T]:
        """Items `k * size` up to `(k + 1) * size`, resolved."""
        with self._lock:
            if self._cached is not None and self._cached[0] == k:
                return self._cached[1]
            parts: dict[int, list[Any]] = {}
            for offset, length in self._blobs[k]:
                assert self._file is not None
                self._file.seek(offset)
                for position, part in pickle.loads(self._file.read(length)):
                    parts.setdefault(position, []).append(part)
            for position, part in self._waiting.get(k, []):
                parts.setdefault(position, []).append(part)
            start = k * self.size
            items = [
                self._resolve(p, parts.get(p, [])) for p in range(start, min(start + self.size, len(self)))
            ]
            self._cached = (k, items)
            return items

    def chunks(self) -> Iterator[list[T]]:
        for k in range(self.n_chunks):
            yield self.chunk(k)

    def __iter__(self) -> Iterator[T]:
        for items in self.chunks():
            yield from items

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            out: list[T] = []
            while start < stop:  # a chunk at a time
                k, offset = divmod(start, self.size)
                part = self.chunk(k)[offset : offset + stop - start]
                out += part
                start += len(part)
            return out
        n = len(self)
        if not -n <= i < n:
            raise IndexError("spool index out of range")
        i %= n
        return self.chunk(i // self.size)[i % self.size]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Spool, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Spool({len(self) if self._n is not None else 'unsealed'} items)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))  # another process gets the items

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Taken as it is by a pydantic field (never iterated to validate it); dumped as a list."""
        return core_schema.is_instance_schema(
            cls, serialization=core_schema.plain_serializer_function_ser_schema(list)
        )


def spooled(items: Iterable[T], size: int | None = None, in_memory: int | None = None) -> Spool[T]:
    """`items` in a spool, in order."""
    spool: Spool[T] = Spool(size=size, in_memory=in_memory)
    for item in items:
        spool.append(item)
    return spool.seal()

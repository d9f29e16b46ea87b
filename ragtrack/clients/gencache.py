"""The generation cache: every answer an LLM gave, on disk, keyed by what determined it.

**Format: append-only JSONL** (`<cache_dir>/generations.jsonl`, one answer a line; by
default `cache_dir` is `$RAGTRACK_CACHE_DIR/generations`, see `ragtrack.core.cachedir`), not
SQLite: each answer is one `os.write` of one whole line on a file opened `O_APPEND`, so
it reaches the file (the OS page cache) the moment it arrives and survives a `kill -9`
of the process; the kernel places each such write at the end of the file, so sweep jobs
sharing one cache need no lock and never interleave their lines. The file is plain text
a person can grep, and it only grows.

Reading is tolerant: a line that is not a whole, valid entry (a write cut short by a
crash or a full disk) is skipped and counted, never fatal. A writer that finds the file
not ending in a newline adds one before its first line, so a torn line cannot swallow
the next answer.

Entries are verified, not trusted: each line ends with `"sha256"`, the sha256 of the
line's bytes before it (the entry's JSON, `}` closing it), and an entry whose bytes do not
match (edited by hand or by a faulty writer, or written before lines had it) is not used:
its request is sent again, and the new answer appended. Opening a cache with such entries
says so in one warning line. Checking costs a hash of each line (100,000 entries open in
1.1-1.2 s, 0.95 s unchecked).

The key (`request_key`) is the sha256 of the canonical JSON of everything that
determines an answer: endpoint, model, the rendered messages, the decoding parameters
and the seed. No credential is part of it, and none is stored: an entry holds the key,
the model name, the answer text, its token usage, latency and finish reason. Errors are
never cached: only answers are written.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ragtrack.core.cachedir import cache_root
from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_bytes, sha256_json

__all__ = ["CACHE_FILE", "CacheEntry", "GenCache", "open_cache", "request_key"]

CACHE_FILE = "generations.jsonl"
log = logging.getLogger("ragtrack")


class CacheEntry(BaseModel):
    """One cached answer (what `ChatResult` needs to be rebuilt without a request)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    key: str
    model: str
    text: str
    usage: dict[str, int]
    latency_ms: float
    finish_reason: str | None = None

    def line(self) -> bytes:
        """The entry as its cache line: its JSON, then the sha256 of that JSON's bytes as the last field."""
        body = json.dumps(self.model_dump(), ensure_ascii=False, allow_nan=False).encode("utf-8")
        return body[:-1] + b',"sha256":"' + sha256_bytes(body).encode() + b'"}\n'


def request_key(endpoint: str, model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of endpoint, model, messages and decoding parameters (seed included)."""
    return sha256_json({"endpoint": endpoint, "model": model, "messages": messages, "params": params})


class GenCache:
    """The cache file of one directory: read once when opened, appended to as answers arrive."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / CACHE_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(
                str(directory), f"cannot create the cache directory: {e.strerror or e}", field="cache_dir"
            ) from None
        self._entries: dict[str, CacheEntry] = {}
        self.n_skipped = 0  # lines that were not whole entries (torn writes)
        self.n_unverified = 0  # whole entries whose content does not match their checksum: not used
        self._read()
        if self.n_unverified:
            log.warning(
                "generation cache %s: %d answer(s) do not match their checksum (edited, or cached before "
                "checksums): asking for them again",
                self.path,
                self.n_unverified,
            )
        self._fd: int | None = None
        self._lock = threading.Lock()  # the client's worker threads share one cache

    def _read(self) -> None:
        try:
            f = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as e:
            raise InputError(str(self.path), f"cannot read: {e.strerror or e}", field="cache_dir") from None
        with f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    entry = CacheEntry.model_validate(json.loads(raw))
                except (ValueError, ValidationError):
                    self.n_skipped += 1
                    continue
                if not _verified(raw):
                    self.n_unverified += 1
                    continue
                self._entries.setdefault(entry.key, entry)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> CacheEntry | None:
        return self._entries.get(key)

    def put(self, entry: CacheEntry) -> None:
        """Append one answer as one write of one line (see the module docstring)."""
        line = entry.line()
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                if _ends_torn(self.path):
                    os.write(self._fd, b"\n")  # a crash cut the last line short: keep it from swallowing ours
            view = memoryview(line)
            while (
                view
            ):  # a regular file takes the whole line at once; loop only for a short write (disk full)
                view = view[os.write(self._fd, view) :]
            self._entries.setdefault(entry.key, entry)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def open_cache(directory: str | None) -> GenCache:
    """The cache in `directory`, else in ragtrack's cache root (`$RAGTRACK_CACHE_DIR/generations`, see
    `cachedir`)."""
    return GenCache(directory or cache_root("generations"))


_SUM_PREFIX = b',"sha256":"'
_SUM_LEN = len(_SUM_PREFIX) + 64 + 2  # the prefix, 64 hex digits, `"}`


def _verified(raw: bytes) -> bool:
    """Whether a line's last field is the sha256 of the bytes before it (see `CacheEntry.line`)."""
    raw = raw.rstrip(b"\r\n")
    if (
        len(raw) <= _SUM_LEN
        or raw[-_SUM_LEN : -_SUM_LEN + len(_SUM_PREFIX)] != _SUM_PREFIX
        or not raw.endswith(b'"}')
    ):
        return False
    return sha256_bytes(raw[:-_SUM_LEN] + b"}").encode() == raw[-66:-2]


def _ends_torn(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"

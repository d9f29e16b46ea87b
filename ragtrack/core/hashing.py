"""Canonical JSON and content hashes: the basis of every version stamp."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "sha1_bytes", "sha1_file", "sha256_bytes", "sha256_file", "sha256_json"]


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no insignificant whitespace and UTF-8 text kept as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha1_bytes(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: str | Path, algorithm: str) -> str:
    """Hex digest of a file's bytes, read in chunks (memory stays flat for any size)."""
    with Path(path).open("rb") as f:
        return hashlib.file_digest(f, algorithm).hexdigest()


def sha1_file(path: str | Path) -> str:
    return _file_digest(path, "sha1")


def sha256_file(path: str | Path) -> str:
    return _file_digest(path, "sha256")


def sha256_json(obj: Any) -> str:
    """sha256 of `canonical_json(obj)`: equal for equal content, whatever the key order."""
    return sha256_bytes(canonical_json(obj).encode("utf-8"))

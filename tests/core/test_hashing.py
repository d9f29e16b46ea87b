"""Content hashes: file digests equal those of the bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ragtrack.core.hashing import sha1_file, sha256_file

DATA = bytes(range(256)) * 5000  # larger than one read chunk


def test_sha1_file_is_sha1_of_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(DATA)
    assert sha1_file(tmp_path / "f") == hashlib.sha1(DATA).hexdigest()


def test_sha256_file_is_sha256_of_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(DATA)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(DATA).hexdigest()

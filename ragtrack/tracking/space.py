"""Disk space: what a run needs where it writes, checked before it writes, and a full disk named in one line.

A stage checks the free space of the local filesystems it is about to fill (the artifact
folder, the SQLite store's folder) once its artifacts are staged, so a run that cannot fit
ends FAILED before it writes half of them. The figures are estimates from measured runs:
the demo's 52 traced cases grew its store by 0.92 MB (17.7 KB each), and the UI table
artifact takes 1.3-1.4 KB per case at 52 and at 100,000 cases. A disk that fills meanwhile
(another writer) is caught where the write fails and reported the same way (`errors.DiskFull`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ragtrack.core.errors import DiskFull

__all__ = ["RUN_BYTES", "TABLE_BYTES_PER_CASE", "TRACE_BYTES", "local_dir", "require", "tree_bytes"]

TRACE_BYTES = 20 * 1024  # store growth per traced case
TABLE_BYTES_PER_CASE = 1536  # cases_table.json, the UI's table artifact
RUN_BYTES = (
    1024 * 1024
)  # a run's own rows (params, metrics, tags) and the room one commit of its journal takes


def local_dir(uri: str | None) -> Path | None:
    """The local folder behind an artifact URI or a path (`file:///…`, `/…`), or None when it is remote."""
    if not uri:
        return None
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return Path(unquote(parts.path))
    if parts.scheme == "" or len(parts.scheme) == 1:  # a path (a drive letter on Windows)
        return Path(uri)
    return None


def tree_bytes(root: Path) -> int:
    """Bytes of every file under `root`."""
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def require(needs: Mapping[Path, int]) -> None:
    """Raise `DiskFull` unless each filesystem has room for what is to be written to the folders on it.

    Folders on one filesystem add up; a folder that does not exist yet counts on its nearest existing
    parent's.
    """
    by_device: dict[int, tuple[Path, int, int]] = {}
    for folder, needed in needs.items():
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        device = os.stat(existing).st_dev
        first, total, _ = by_device.get(device, (folder, 0, 0))
        by_device[device] = (first, total + needed, shutil.disk_usage(existing).free)
    for folder, needed, free in by_device.values():
        if needed > free:
            raise DiskFull(folder, needed)

"""Where ragtrack keeps its on-disk caches (embeddings, built indexes, generations).

`$RAGTRACK_CACHE_DIR`, else `~/.cache/ragtrack`. The location is deliberately not part of
any config: where a cache lives must not change a run's config hash. Sweep jobs on
several machines share a cache by pointing `RAGTRACK_CACHE_DIR` at a shared folder.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root(kind: str) -> Path:
    """The cache folder for `kind` (e.g. "embeddings"); not created here."""
    base = os.environ.get("RAGTRACK_CACHE_DIR") or Path.home() / ".cache" / "ragtrack"
    return Path(base).expanduser() / kind

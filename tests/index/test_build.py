"""Building an index: what its version depends on, storage on disk, reuse, and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragtrack.clients.embeddings import resolve_model
from ragtrack.core.cachedir import cache_root
from ragtrack.core.errors import InputError
from ragtrack.index.build import index_spec, open_index
from tests.conftest import make_config
from tests.index.corpus import index_config, write_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


def _version(folder: Path, **kw) -> str:
    return index_spec(index_config(folder, **kw)).version


def test_another_name_folder_and_batch_size_give_the_same_version(corpus, tmp_path):
    moved = shutil.copytree(corpus, tmp_path / "elsewhere" / "docs")
    assert _version(moved, name="other", batch_size=8) == _version(corpus)


def test_version_changes_with_a_corpus_file_s_bytes(corpus):
    before = _version(corpus)
    with (corpus / "en" / "sla.md").open("a", encoding="utf-8") as f:
        f.write("\n")
    assert _version(corpus) != before


def test_version_changes_with_a_corpus_file_s_relative_path(corpus):
    before = _version(corpus)
    (corpus / "en" / "sla.md").rename(corpus / "en" / "sla2.md")
    assert _version(corpus) != before


@pytest.mark.parametrize("change", [{"size": 101}, {"overlap": 10}, {"boundary": "sentence"}])
def test_version_changes_with_each_chunker_parameter(corpus, change):
    assert _version(corpus, **change) != _version(corpus)


def test_the_same_weights_in_another_folder_give_the_same_version(corpus, tmp_path):
    model = shutil.copytree(resolve_model(None), tmp_path / "minilm")
    assert _version(corpus, model=str(model)) == _version(corpus)


def test_version_changes_with_the_embedder_weights(corpus, tmp_path):
    model = shutil.copytree(resolve_model(None), tmp_path / "minilm")
    (model / "config.json").write_text((model / "config.json").read_text() + "\n")
    assert _version(corpus, model=str(model)) != _version(corpus)


def test_the_index_is_stored_under_its_version_with_no_temporary_folder_left(corpus):
    index = open_index(index_spec(index_config(corpus, size=90)))
    assert Path(index.path) == cache_root("indexes") / index.spec.version
    assert [p.name for p in cache_root("indexes").iterdir() if p.name.startswith(".")] == []


def test_a_built_index_is_reused_without_embedding_anything(corpus):
    cfg = index_config(corpus, size=80)
    open_index(index_spec(cfg))
    spec = index_spec(cfg)
    before = spec.embedder.stats.requested
    again = open_index(spec)
    assert (again.built, spec.embedder.stats.requested) == (False, before)


def test_the_vectors_are_one_row_per_chunk(corpus):
    index = open_index(index_spec(index_config(corpus)))
    assert index.vectors.shape == (len(index.chunks), 384)


def test_chunk_ids_name_the_file_and_the_span(corpus):
    spec = index_spec(index_config(corpus))
    c = spec.chunks[0]
    assert (c.id, c.source_path) == (f"en/sla.md:{c.start}-{c.end}", "en/sla.md")


# ---------------------------------------------------------------- bad input


def test_a_missing_corpus_folder_names_it(tmp_path):
    with pytest.raises(InputError, match="corpus folder does not exist") as e:
        index_spec(index_config(tmp_path / "nope"))
    assert (e.value.file, e.value.field) == (str(tmp_path / "nope"), "index.corpus.dir")


def test_an_empty_corpus_folder_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="the corpus is empty") as e:
        index_spec(index_config(tmp_path / "empty"))
    assert e.value.field == "index.corpus.glob"


@pytest.mark.parametrize("glob", ["", "/etc/*"])
def test_a_glob_that_is_empty_or_absolute_names_the_key(corpus, glob):
    with pytest.raises(InputError, match="bad glob") as e:
        index_spec(index_config(corpus, glob=glob))
    assert e.value.field == "index.corpus.glob"


def test_a_corpus_of_blank_files_is_an_error(tmp_path):
    (tmp_path / "blank.md").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(InputError, match="hold no text"):
        index_spec(index_config(tmp_path))


def test_a_file_that_is_not_utf8_names_the_file(corpus):
    (corpus / "bad.md").write_bytes(b"ok \xff\xfe")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 3\)") as e:
        index_spec(index_config(corpus))
    assert e.value.file == str(corpus / "bad.md")


def test_a_missing_model_path_names_the_key(corpus, tmp_path):
    with pytest.raises(InputError, match="model path does not exist") as e:
        index_spec(index_config(corpus, model=str(tmp_path / "no-model")))
    assert e.value.field == "index.embedder.model"


@pytest.mark.parametrize(
    "chunker,problem",
    [
        ({"size": 100, "overlap": 100}, "overlap (100) must be smaller than size (100)"),
        ({"size": 0}, "greater than 0"),
        ({"size": 100, "boundary": "word"}, "'paragraph', 'sentence' or 'char'"),
    ],
)
def test_a_bad_chunker_value_names_the_key(demo_files, chunker, problem):
    index = {"name": "x", "corpus": {"dir": "d"}, "chunker": chunker, "embedder": {}}
    with pytest.raises(InputError) as e:
        make_config(demo_files, index=index)
    assert problem in e.value.problem and e.value.field.startswith("index.chunker")


def test_a_built_index_with_a_recorded_path_is_an_error(demo_files):
    index = {"name": "x", "path": "p", "corpus": {"dir": "d"}, "chunker": {"size": 9}, "embedder": {}}
    with pytest.raises(InputError, match="not both"):
        make_config(demo_files, index=index)

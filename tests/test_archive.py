"""Archiving a run's inputs: unique paths, bytes verified against the hashes recorded while scoring."""

from __future__ import annotations

import json
import shutil

import pytest

from ragtrack.archive import write_archive
from ragtrack.errors import InputError
from ragtrack.hashing import sha1_file
from ragtrack.predictions import match_prediction_file
from ragtrack.runner import run
from tests.conftest import make_config


def _same_named(demo_files, tmp_path):
    """The demo's question_v2 and qaset files, both named `cases.json`, in two folders."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copyfile(demo_files["questions"], a / "cases.json")
    shutil.copyfile(demo_files["qaset"], b / "cases.json")
    return make_config(demo_files, eval_set={"name": "same", "files": [str(a / "cases.json"), str(b / "cases.json")]})


def test_same_named_eval_files_get_unique_paths(demo_files, tmp_path):
    m = write_archive(run(_same_named(demo_files, tmp_path)), tmp_path / "archive")
    assert [f.artifact_path for f in m.eval_files] == ["inputs/0/cases.json", "inputs/1/cases.json"]


def test_archived_eval_files_are_byte_identical(demo_files, tmp_path):
    m = write_archive(run(_same_named(demo_files, tmp_path)), tmp_path / "archive")
    assert [sha1_file(tmp_path / "archive" / f.artifact_path) for f in m.eval_files] == [f.sha1 for f in m.eval_files]


def test_replayed_predictions_are_archived_byte_for_byte(demo_files, tmp_path):
    m = write_archive(run(make_config(demo_files, predictions="bad")), tmp_path / "archive")
    assert (m.predictions_artifact_path, m.predictions_sha1) == ("predictions/bad.jsonl", sha1_file(demo_files["bad"]))


def test_a_file_changed_during_the_run_is_an_error(demo_files, tmp_path):
    result = run(make_config(demo_files))
    demo_files["qaset"].write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="changed while the run was scoring it"):
        write_archive(result, tmp_path / "archive")


def test_generated_predictions_are_archived_in_the_predictions_format(demo_files, tmp_path):
    cfg = make_config(demo_files, generator={"name": "callable", "params": {"target": "tests.generators.sample_fns:structured"}})
    result = run(cfg)
    m = write_archive(result, tmp_path / "archive")
    again = match_prediction_file(tmp_path / "archive" / m.predictions_artifact_path, result.eval_set.cases)
    assert again.predictions == result.generation.predictions


def test_dev_stage_archives_its_subset_file(demo_files, tmp_path):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    result = run(cfg, dev_subset=True)
    m = write_archive(result, tmp_path / "archive")
    archived = json.loads((tmp_path / "archive" / m.eval_files[0].artifact_path).read_text(encoding="utf-8"))
    assert [item["id"] for item in archived] == [c.id for c in result.eval_set.cases if c.expected is not None]

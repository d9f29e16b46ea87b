"""The disk space a stage needs, checked before it writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragtrack.core.errors import DiskFull
from ragtrack.tracking.space import local_dir, require, tree_bytes


@pytest.mark.parametrize(
    ("uri", "folder"),
    [
        ("file:///srv/mlartifacts/1/abc/artifacts", Path("/srv/mlartifacts/1/abc/artifacts")),
        ("/srv/a%20b", Path("/srv/a%20b")),
        ("file:///srv/a%20b", Path("/srv/a b")),
    ],
)
def test_local_artifact_uris_are_folders(uri, folder):
    assert local_dir(uri) == folder


@pytest.mark.parametrize("uri", ["mlflow-artifacts:/1/abc/artifacts", "s3://bucket/1/abc", None, ""])
def test_remote_artifact_uris_are_not_checked(uri):
    assert local_dir(uri) is None


def test_tree_bytes_adds_every_file_below(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_bytes(b"12345")
    (tmp_path / "y").write_bytes(b"123")
    assert tree_bytes(tmp_path) == 8


def test_room_enough_passes(tmp_path):
    require({tmp_path: 1})


def test_more_than_is_free_is_disk_full_naming_the_folder(tmp_path):
    with pytest.raises(DiskFull, match=str(tmp_path)):
        require({tmp_path: shutil.disk_usage(tmp_path).free + 1})


def test_folders_on_one_filesystem_add_up(tmp_path):
    half = shutil.disk_usage(tmp_path).free // 2 + 1
    with pytest.raises(DiskFull):
        require({tmp_path / "a": half, tmp_path / "b": half})


def test_a_folder_not_made_yet_counts_on_its_parent(tmp_path):
    with pytest.raises(DiskFull, match="not/yet"):
        require({tmp_path / "not" / "yet": shutil.disk_usage(tmp_path).free + 1})

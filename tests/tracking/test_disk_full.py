"""A full disk, for real: `ragtrack run` on a small tmpfs (needs the right to mount one; skipped otherwise).

One line on the console naming the folder, its free space and what the step needs; the
run that exists ends FAILED; no half-created store; the next run, once there is room,
succeeds with no manual step.
"""

from __future__ import annotations

import sqlite3
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import run


def _mount(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
        ).returncode
        == 0
    )


def _remount(where: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def small_disk(tmp_path_factory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("tmpfs") / uuid.uuid4().hex[:8]
    if not _mount(where, "500k"):
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _run(disk: Path) -> subprocess.CompletedProcess[str]:
    return run(["run", f"tracking.uri=sqlite:///{disk / 'mlflow.db'}"])


def _statuses(disk: Path) -> list[str]:
    with sqlite3.connect(disk / "mlflow.db") as con:
        return [s for (s,) in con.execute("SELECT status FROM runs ORDER BY start_time")]


@pytest.fixture(scope="module")
def too_small_for_the_store(small_disk) -> subprocess.CompletedProcess[str]:
    return _run(small_disk)  # 500 KB: a new store needs about 1 MB


@pytest.fixture(scope="module")
def room_for_the_store_only(
    small_disk, too_small_for_the_store
) -> tuple[subprocess.CompletedProcess[str], Path]:
    _remount(small_disk, "1300k")
    return _run(small_disk), small_disk


@pytest.fixture(scope="module")
def room_again(room_for_the_store_only) -> tuple[subprocess.CompletedProcess[str], Path]:
    _, disk = room_for_the_store_only
    _remount(disk, "64m")
    return _run(disk), disk


def test_no_room_for_a_new_store_is_one_line(too_small_for_the_store):
    assert too_small_for_the_store.stderr.strip().count("\n") == 0


def test_no_room_for_a_new_store_names_the_folder_and_says_no_run_was_logged(
    too_small_for_the_store, small_disk
):
    line = too_small_for_the_store.stderr
    assert (f"disk full writing {small_disk}:" in line, "no run was logged" in line) == (True, True)


def test_no_room_for_a_new_store_exits_1(too_small_for_the_store):
    assert too_small_for_the_store.returncode == 1


def test_no_room_for_a_new_store_leaves_no_store(too_small_for_the_store, small_disk):
    assert not (small_disk / "mlflow.db").exists() or _statuses(small_disk) == []


def test_no_room_for_the_artifacts_is_one_line_naming_the_run(room_for_the_store_only):
    result, _ = room_for_the_store_only
    assert (result.stderr.strip().count("\n"), "ended FAILED" in result.stderr) == (0, True)


def test_no_room_for_the_artifacts_ends_the_run_failed(room_for_the_store_only):
    _, disk = room_for_the_store_only
    assert _statuses(disk) == ["FAILED"]


def test_no_room_for_the_artifacts_writes_none_of_them(room_for_the_store_only):
    _, disk = room_for_the_store_only
    assert not [p for p in (disk / "mlartifacts").rglob("*") if p.is_file()]


def test_a_run_after_space_is_freed_succeeds(room_again):
    result, disk = room_again
    assert (result.returncode, _statuses(disk)) == (0, ["FAILED", "FINISHED"])

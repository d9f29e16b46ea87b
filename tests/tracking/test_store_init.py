"""Creating a store whole or not at all, repairing a half-created one, and `ragtrack store init`: real SQLite
files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy
from filelock import FileLock
from mlflow.store.db.utils import _get_latest_schema_revision
from mlflow.store.tracking.dbmodels.initial_models import Base as InitialBase
from mlflow.tracking import MlflowClient

from ragtrack.core.errors import InputError
from ragtrack.tracking.store import lock_path, prepare_sqlite
from tests.processes import env

ROOT = Path(__file__).resolve().parent.parent.parent


def _tables(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        return {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _revision(db: Path) -> str:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def _half_created(db: Path) -> None:
    """What a migration cut short leaves: MLflow's first tables, none of its later ones."""
    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    InitialBase.metadata.create_all(engine)
    engine.dispose()


def _full_store_with_a_run(db: Path) -> None:
    client = MlflowClient(f"sqlite:///{db}")
    client.create_run(client.create_experiment("kept"))
    client._tracking_client.store.engine.dispose()


def test_a_new_store_is_created_at_mlflows_schema(tmp_path):
    db = tmp_path / "mlflow.db"
    assert (prepare_sqlite(db), _revision(db)) == ("created", _get_latest_schema_revision())


def test_creating_a_store_leaves_no_temporary_file(tmp_path):
    prepare_sqlite(tmp_path / "mlflow.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlflow.db"]


def test_a_ready_store_is_left_alone(tmp_path):
    db = tmp_path / "mlflow.db"
    prepare_sqlite(db)
    before = db.stat().st_mtime_ns
    assert (prepare_sqlite(db), db.stat().st_mtime_ns) == ("ready", before)


def test_an_empty_file_is_a_new_store(tmp_path):
    db = tmp_path / "mlflow.db"
    db.touch()
    assert prepare_sqlite(db) == "created"


def test_a_half_created_store_is_rebuilt(tmp_path):
    db = tmp_path / "mlflow.db"
    _half_created(db)
    assert (prepare_sqlite(db), _revision(db)) == ("rebuilt", _get_latest_schema_revision())


def test_a_half_created_store_is_kept_beside_the_new_one(tmp_path):
    db = tmp_path / "mlflow.db"
    _half_created(db)
    prepare_sqlite(db)
    kept = list(tmp_path.glob("mlflow.db.incomplete-*"))
    assert len(kept) == 1 and "experiments" in _tables(kept[0])


def test_a_leftover_migration_table_makes_a_store_incomplete(tmp_path):
    db = tmp_path / "mlflow.db"
    prepare_sqlite(db)
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE spans")
    assert prepare_sqlite(db) == "rebuilt"


def test_a_store_with_data_at_another_schema_names_the_upgrade_command(tmp_path):
    db = tmp_path / "mlflow.db"
    _full_store_with_a_run(db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE alembic_version SET version_num = '0584bdc529eb'")
    with pytest.raises(InputError, match=r"mlflow db upgrade sqlite:///.*mlflow\.db"):
        prepare_sqlite(db)


def test_a_store_with_data_is_never_moved_aside(tmp_path):
    db = tmp_path / "mlflow.db"
    _full_store_with_a_run(db)
    with sqlite3.connect(db) as con:
        con.execute("UPDATE alembic_version SET version_num = '0584bdc529eb'")
    with pytest.raises(InputError):
        prepare_sqlite(db)
    assert not list(tmp_path.glob("mlflow.db.incomplete-*"))


def test_a_file_that_is_not_a_database_is_bad_input_naming_it(tmp_path):
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"not a database" * 100)
    with pytest.raises(InputError, match="mlflow.db: not a usable SQLite store"):
        prepare_sqlite(db)


def test_a_creator_killed_mid_way_leaves_nothing_the_next_opener_keeps(tmp_path):
    (tmp_path / "mlflow.db.creating-99999").write_bytes(b"partial")
    prepare_sqlite(tmp_path / "mlflow.db")
    assert not list(tmp_path.glob("*.creating-*"))


# ------------------------------------------------------------------ ragtrack store init


def _store_init(uri: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragtrack.app.cli", "store", "init", "--tracking-uri", uri],
        cwd=ROOT,
        env=env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_store_init_creates_the_store(tmp_path):
    db = tmp_path / "mlflow.db"
    out, _ = _store_init(f"sqlite:///{db}").communicate(timeout=120)
    assert (out.strip(), _revision(db)) == (f"store ready: sqlite:///{db}", _get_latest_schema_revision())


def test_store_init_waits_while_another_process_builds_the_store(tmp_path):
    db = tmp_path / "mlflow.db"
    with FileLock(lock_path(db)):  # as a `ragtrack run` holds it while it creates the store
        proc = _store_init(f"sqlite:///{db}")
        time.sleep(8)  # far longer than creating a store takes
        waiting = proc.poll() is None and not db.exists()
    proc.communicate(timeout=120)
    assert (waiting, proc.returncode) == (True, 0)


def test_store_init_on_a_broken_file_is_one_line_and_exit_2(tmp_path):
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"x" * 5000)
    proc = _store_init(f"sqlite:///{db}")
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, len(err.strip().splitlines())) == (2, 1)

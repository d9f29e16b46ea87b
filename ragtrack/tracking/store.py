"""Open an MLflow tracking store that several processes share, and log dataset inputs to it safely.

Why this exists: the first `MlflowClient` of a process builds MLflow's `SqlAlchemyStore`,
whose constructor creates and migrates an empty database without any cross-process
lock (MLflow 3.17 calls `_initialize_tables` directly; its locked variant
`_safe_initialize_tables` is not used there). SQLite runs DDL outside transactions, so
`ragtrack run` processes started together on a fresh directory interleave alembic's
steps: they fail ("table ... already exists", "duplicate column name", "Online migration
expected to match one row") and can leave `_alembic_tmp_*` tables that break every
later command. `open_client` takes a file lock beside the database while the schema is
created or migrated, so exactly one process migrates and the others find it done.

MLflow's `log_inputs` reads which datasets exist and then inserts the missing ones in
a later statement; two runs logging a new eval-set version at once both insert it and
one fails on the datasets table's primary key (experiment, name, digest).
`log_inputs_idempotent` retries on that conflict: the failed call rolled back whole,
and the retry finds the winner's row and links to it. It relies only on the client
API, so it works the same against a REST server backed by PostgreSQL.

A new SQLite store is built in a temporary file beside the database and renamed into
place once MLflow's migrations are all applied, so a crash or a full disk while the
schema is created leaves no half-created store behind: only a temporary file, removed by
the next opener. A store some other program left half-created (tables from part of the
migrations, no data in them) is moved aside to `<db>.incomplete-<UTC time>` and rebuilt,
with one warning; one that holds data but is not at MLflow's schema is refused with the
exact commands that upgrade it. `ragtrack store init` does all this for `mlflow ui` and
`mlflow server` users: MLflow's own processes migrate without any lock (see above), so
they must find the store ready.

SQLite locking, as measured (bench/contention_store.py: 8 and 16 processes writing runs
flat out, WAL and rollback journal alike): no call failed with "database is locked",
and the slowest waited under 6 s. MLflow sets `busy_timeout=20000` on every session,
and its engine keeps pysqlite's legacy transactions, which send BEGIN just before the
first INSERT/UPDATE/DELETE: a session's reads run outside its write transaction, so a
writer waits in the busy handler instead of hitting the immediate SQLITE_BUSY that a
deferred read-then-write transaction gets (which no timeout can fix). Should MLflow or
SQLAlchemy start a transaction before the first read, that is the moment to add
`BEGIN IMMEDIATE`. WAL is still worth setting: the same load took 32-48 s against 42-76 s.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock
from mlflow.entities import DatasetInput
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from sqlalchemy.engine import make_url

from ragtrack.core.errors import InputError, disk_full

__all__ = [
    "LOCK_TIMEOUT_S",
    "NEW_STORE_BYTES",
    "is_conflict",
    "lock_path",
    "log_inputs_idempotent",
    "open_client",
    "prepare_sqlite",
    "sqlite_path",
]

log = logging.getLogger(__name__)


def _raised_anyway(record: logging.LogRecord) -> bool:
    """False for MLflow's log of a database error it then raises (with its traceback): the caller reports it
    once."""
    return not str(record.msg).startswith("SQLAlchemy database error")


# MLflow announces creating and migrating a new SQLite store at INFO, and logs each database
# error with its traceback before raising it (a full disk: 300 lines for one failed run).
for _name in ("mlflow.store.db.utils", "alembic.runtime.migration"):
    logging.getLogger(_name).setLevel(logging.WARNING)
if not os.environ.get("RAGTRACK_DEBUG"):
    logging.getLogger("mlflow.store.db.utils").addFilter(_raised_anyway)

# a migration of an empty store takes seconds; this only stops a hung holder blocking forever
LOCK_TIMEOUT_S = 600.0
BUSY_TIMEOUT_MS = 20_000  # the same wait MLflow sets on each of its sessions
INPUT_ATTEMPTS = 6  # each retry resolves at least one conflicting dataset row
NEW_STORE_BYTES = (
    2 * 1024 * 1024
)  # creating a store: 0.95 MB of database plus its journal while the schema is built
_DEFAULT_ROWS = {
    "experiments": "experiment_id = 0",
    "workspaces": "name = 'default'",
}  # rows a new store starts with

_clients: dict[tuple[int, str], MlflowClient] = {}
_clients_lock = threading.Lock()

# What a lost insert race looks like in the error text, per backend (MLflow wraps the
# driver's IntegrityError in an MlflowException, and a REST server passes the text on).
_CONFLICT = re.compile(
    r"UNIQUE constraint failed"  # SQLite
    r"|duplicate key value violates unique constraint"  # PostgreSQL
    r"|Duplicate entry"  # MySQL
    r"|Violation of PRIMARY KEY constraint|Cannot insert duplicate key",  # SQL Server
    re.IGNORECASE,
)


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:` URI (absolute), or None for in-memory and non-SQLite stores."""
    if not uri.startswith("sqlite:"):
        return None
    database = make_url(uri).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).resolve()


def lock_path(db: Path) -> Path:
    """`<db>.lock`, beside the database so every process sharing the file finds the same lock."""
    return db.with_name(db.name + ".lock")


def open_client(uri: str) -> MlflowClient:
    """A client whose store is ready: for SQLite, created and migrated by one process at a time.

    Cached per (process, uri): the store is opened once per process, and a forked child
    opens its own rather than reusing its parent's connections.
    """
    key = (os.getpid(), uri)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _open(uri)
    return client


def _open(uri: str) -> MlflowClient:
    db = sqlite_path(uri)
    if db is None:
        return MlflowClient(tracking_uri=uri)
    db.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_path(db), timeout=LOCK_TIMEOUT_S):
        prepare_sqlite(db)
        _enable_wal(db)
        client = MlflowClient(tracking_uri=uri)
        client.search_experiments(max_results=1)  # MLflow verifies the schema when it builds its store
    return client


def prepare_sqlite(db: Path) -> str:
    """Make `db` a store at MLflow's schema; the caller holds `lock_path(db)`. Returns what was done.

    `created` (atomically, see the module's docstring), `rebuilt` (a half-created store moved
    aside first), or `ready` (nothing to do). A store with data at another schema is an
    `InputError` naming the commands that upgrade it.
    """
    for leftover in db.parent.glob(f"{db.name}.creating-*"):  # a creator killed mid-way; we hold the lock
        leftover.unlink(missing_ok=True)
    state = _state(db)
    if state == "ready":
        return state
    if state == "incomplete":
        kept = _move_aside(db)
        log.warning(
            "store %s was left half-created (part of MLflow's schema, no data): kept it as %s and built "
            "a new one",
            db,
            kept.name,
        )
    _create(db)
    return "created" if state == "new" else "rebuilt"


def _state(db: Path) -> str:
    """`new` (no file, or no tables), `ready` (at MLflow's schema), `incomplete` (part of it, no data); else
    raise."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    if not db.exists() or db.stat().st_size == 0:
        return "new"
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revision = (
                con.execute("SELECT version_num FROM alembic_version").fetchone()
                if "alembic_version" in tables
                else None
            )
            rows = sum(_user_rows(con, t) for t in tables if not t.startswith("alembic_"))
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise InputError(
            str(db), f"not a usable SQLite store ({e}); move it away or point tracking.uri elsewhere"
        ) from None
    if not tables - {"alembic_version"}:
        return "new"
    head = _get_latest_schema_revision()
    found = revision[0] if revision else None
    if found == head and _all_tables(tables):
        return "ready"
    if rows == 0:
        return "incomplete"
    raise InputError(
        str(db),
        f"the store holds data at schema {found or 'unknown'} but this MLflow needs {head}; "
        f"back it up and upgrade it: cp {db} {db}.bak && mlflow db upgrade sqlite:///{db}",
    )


def _user_rows(con: sqlite3.Connection, table: str) -> int:
    """Rows of `table` that someone added (a new store's Default experiment and workspace do not count)."""
    quoted = '"' + table.replace('"', '""') + '"'
    keep = _DEFAULT_ROWS.get(table)
    try:
        return int(
            con.execute(
                f"SELECT count(*) FROM {quoted}" + (f" WHERE NOT ({keep})" if keep else "")
            ).fetchone()[0]
        )
    except sqlite3.OperationalError:  # a table from another schema without that column: count every row
        return int(con.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])


def _all_tables(found: set[str]) -> bool:
    from mlflow.store.db.base_sql_model import Base
    from mlflow.store.db.utils import _all_tables_exist  # noqa: F401 - imports every table's model into Base

    return set(Base.metadata.tables) <= found


def _create(db: Path) -> None:
    """Build MLflow's schema in `<db>.creating-<pid>` and rename it to `db`: the store appears whole or not at
    all."""
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables, _verify_schema
    from sqlalchemy.pool import NullPool

    tmp = db.with_name(f"{db.name}.creating-{os.getpid()}")
    try:
        engine = sqlalchemy.create_engine(f"sqlite:///{tmp}", poolclass=NullPool)
        try:
            _initialize_tables(engine)
            _verify_schema(engine)
        finally:
            engine.dispose()
        for stale in _companions(db):  # journals of an empty file we replace hold nothing of the new one
            stale.unlink(missing_ok=True)
        os.replace(tmp, db)
    except BaseException as e:
        for f in (tmp, *_companions(tmp)):
            f.unlink(missing_ok=True)
        raise (disk_full(e, db.parent, NEW_STORE_BYTES) or e) from e


def _companions(db: Path) -> list[Path]:
    return [db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def _move_aside(db: Path) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = db.with_name(f"{db.name}.incomplete-{stamp}")
    for src in (db, *_companions(db)):
        if src.exists():
            os.replace(src, kept.with_name(kept.name + src.name[len(db.name) :]))
    return kept


def _enable_wal(db: Path) -> None:
    """Put the database in WAL mode (it persists in the file), so readers and the writer don't block each
    other.

    Done through the stdlib driver before MLflow's first connection, so MLflow's engine
    needs no hook. Failing to switch (e.g. another program holds the file) costs only
    concurrency, not correctness, so it is logged and skipped.
    """
    try:
        con = sqlite3.connect(db, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error as e:
        log.warning("could not switch %s to WAL: %s", db, e)
        return
    if mode.lower() != "wal":
        log.warning("%s stays in journal mode %s", db, mode)


def is_conflict(error: BaseException) -> bool:
    """True when `error` is a lost insert race (a unique or primary key violation) on any backend."""
    return bool(_CONFLICT.search(str(error)))


def log_inputs_idempotent(client: MlflowClient, run_id: str, datasets: Sequence[DatasetInput]) -> None:
    """Log `datasets` as inputs of `run_id`, whoever else logs the same datasets at the same time.

    A call that lost an insert race is retried (bounded, with jittered backoff). That is
    safe because MLflow wrote nothing of the failed call, and it is idempotent: the retry
    reuses the dataset rows and the run's input edges that exist by then and adds only
    what is missing, so calling this twice, or from two runs at once, never duplicates a
    dataset. Other errors are raised at once.
    """
    datasets = list(datasets)
    for attempt in range(1, INPUT_ATTEMPTS + 1):
        try:
            client.log_inputs(run_id, datasets=datasets)
            return
        except MlflowException as e:
            if attempt == INPUT_ATTEMPTS or not is_conflict(e):
                raise
            log.debug("dataset inputs of run %s lost an insert race (attempt %d); retrying", run_id, attempt)
            time.sleep(random.uniform(0.05, 0.2) * attempt)

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

__all__ = ["LOCK_TIMEOUT_S", "is_conflict", "lock_path", "log_inputs_idempotent", "open_client", "sqlite_path"]

log = logging.getLogger(__name__)

LOCK_TIMEOUT_S = 600.0  # a migration of an empty store takes seconds; this only stops a hung holder blocking forever
BUSY_TIMEOUT_MS = 20_000  # the same wait MLflow sets on each of its sessions
INPUT_ATTEMPTS = 6  # each retry resolves at least one conflicting dataset row

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
        _enable_wal(db)
        client = MlflowClient(tracking_uri=uri)  # builds the store: creates and migrates the schema
        client.search_experiments(max_results=1)  # make sure of it, should a later MLflow build stores lazily
    return client


def _enable_wal(db: Path) -> None:
    """Put the database in WAL mode (it persists in the file), so readers and the writer don't block each other.

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

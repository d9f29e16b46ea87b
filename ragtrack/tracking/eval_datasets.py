"""An eval set as an MLflow evaluation dataset: one per `eval_set_version`, its records the cases with their
expectations.

MLflow 3's experiment page lists evaluation datasets under **Datasets**. A run's eval set
is found there by its version (the dataset's name, in the characters MLflow keeps) or
created once, with one record per case: `inputs` the question (and the case id),
`expectations` whatever the case carries (a structured answer, a gold verdict and ids, a
ground-truth answer and contexts). The run is tagged with the dataset's id.

The records are written `RECORDS_PER_WRITE` at a time, each chunk built from the cases
only when it is written, so memory (and, on SQLite, the time the store's write lock is
held) is bounded by a chunk, whatever the size of the eval set; the cases are iterated
once. A failed write deletes the new dataset, so a dataset found is one written whole
(a killed process can still leave part of one).

MLflow's record call (`EvaluationDataset.merge_records`) writes to the process-global
tracking URI, which ragtrack never sets; the records go through the client's own store
instead (`upsert_dataset_records`). On MLflow's SQL store that call runs, per record, a
SELECT for a record with the same inputs, which first flushes the previous INSERT: ~50 s
of CPU for 100,000 records on SQLite, in one call or in chunks alike
(bench/bench_eval_dataset.py). The dataset here was just created, empty, and every
record's inputs carry its case id, so there is nothing to look up: `_insert` writes each
chunk as one multi-row INSERT of the rows that method would store (its input hash, its
wrapping of the default empty outputs, `{}` tags; `_rows`), with ids that sort in case
order so that MLflow lists the records as the eval set has them, through the store's
`ManagedSessionMaker`, then sets the dataset's schema, profile, digest and update time as
that method does, in the same transaction, with the store's own
`_validate_dataset_accessible`, `_dataset_query`, `_update_dataset_schema`,
`_compute_dataset_profile` and `_compute_dataset_digest` and MLflow's
`SqlEvaluationDataset` and `SqlEvaluationDatasetRecord` models (about 8 s of CPU for the
same records). These internals (MLflow 3.17) are used nowhere else, and only on a
`SqlAlchemyStore` whose `upsert_dataset_records` is MLflow's own and that has every one
of them (`_sql_store`); the tests compare the rows and what MLflow reads back after
either path. Should a chunk meet inputs already in the dataset (the table's unique
(dataset, input hash) constraint refuses the INSERT and the chunk's transaction rolls
back), that chunk and the rest go through `upsert_dataset_records`, which merges. Any
other store (a REST store for `mlflow server`) gets the chunks through
`upsert_dataset_records`, one call (one request) each.

Jobs creating the same dataset at once keep the oldest and delete their own. A store
without evaluation datasets costs one warning line and nothing else.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import uuid
from collections.abc import Iterable, Iterator
from contextlib import suppress
from itertools import islice
from typing import TYPE_CHECKING, Any

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.time import get_current_time_millis
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from ragtrack.core.types import EvalCase
from ragtrack.tracking.entities import find_or_create, optional
from ragtrack.tracking.search import equals

if TYPE_CHECKING:
    from mlflow.store.tracking.abstract_store import AbstractStore
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

__all__ = [
    "EVAL_DATASET_TAG",
    "RECORDS_PER_WRITE",
    "dataset_name",
    "ensure_eval_dataset",
    "records_of",
    "write_records",
]

log = logging.getLogger("ragtrack")

EVAL_DATASET_TAG = "ragtrack.eval_dataset_id"
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.@+\-]+")
MAX_NAME = 250

# Records per write: one transaction on a SQL store (SQLite's write lock held ~0.1 s), one request of 1-3 MB
# to a server. The memory a write takes grows with it (100,000 question_v2 cases, bench/bench_eval_dataset.py:
# +11 MB at 1,000, +15 MB at 2,000, +45 MB at 10,000) while its CPU, 8.1-8.7 s for them all, does not shrink.
RECORDS_PER_WRITE = 1000

# The SQL store's own methods `_insert` calls (see the module's docstring).
_NEEDED = (
    "ManagedSessionMaker",
    "_validate_dataset_accessible",
    "_dataset_query",
    "_update_dataset_schema",
    "_compute_dataset_profile",
    "_compute_dataset_digest",
)


def dataset_name(eval_set_version: str) -> str:
    return _NOT_IN_NAME.sub("_", eval_set_version)[:MAX_NAME]


def records_of(cases: Iterable[EvalCase]) -> list[dict[str, Any]]:
    """One record per case: its question as `inputs`, what it expects as `expectations`."""
    out = []
    for c in cases:
        expect: dict[str, Any] = {}
        if c.expected is not None:
            expect["expected_answer"] = c.expected.answer_example.model_dump(mode="json")
        if c.gold is not None:
            expect.update(answerable=c.gold.answerable, gold_ids=c.gold.gold_ids)
            if c.gold.gold_claim:
                expect["gold_claim"] = c.gold.gold_claim
        if c.reference is not None:
            if c.reference.ground_truth_answer:
                expect["expected_response"] = c.reference.ground_truth_answer
            if c.reference.ground_truth_contexts:
                expect["expected_contexts"] = c.reference.ground_truth_contexts
        out.append(
            {
                "inputs": {"question": c.question, "case_id": c.id},
                **({"expectations": expect} if expect else {}),
            }
        )
    return out


def _chunks(cases: Iterable[EvalCase], size: int) -> Iterator[list[dict[str, Any]]]:
    """The cases' records, `size` at a time, each chunk built only when the previous one is written."""
    it = iter(cases)
    while batch := list(islice(it, size)):
        yield records_of(batch)


def _sql_store(store: AbstractStore) -> SqlAlchemyStore | None:
    """`store` if `_insert` can stand in for its `upsert_dataset_records`: MLflow's SQL store, with MLflow's
    own method and every internal `_insert` uses; else None."""
    try:  # every MLflow name `_rows` and `_insert` import
        from mlflow.entities.dataset_record import DATASET_RECORD_WRAPPED_OUTPUT_KEY  # noqa: F401
        from mlflow.store.tracking.dbmodels.models import (
            SqlEvaluationDataset,  # noqa: F401
            SqlEvaluationDatasetRecord,  # noqa: F401
        )
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    except ImportError as e:
        log.debug("dataset records go through upsert_dataset_records: %s", e)
        return None
    if (
        isinstance(store, SqlAlchemyStore)
        and type(store).upsert_dataset_records is SqlAlchemyStore.upsert_dataset_records
        and all(hasattr(store, name) for name in _NEEDED)
    ):
        return store
    return None


def _input_hash(inputs: dict[str, Any]) -> str:
    """What MLflow's SQL store finds a record by: the SHA-256 of its inputs as sorted JSON."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _record_ids() -> Iterator[str]:
    """Record ids in MLflow's form (`dr-` and 32 hex digits) that sort in the order they are made: MLflow
    lists a dataset's records by creation time, then id, so the Datasets page shows the cases in eval-set
    order (its own random ids shuffle the records of one write). 80 random bits per write, then a count."""
    prefix = uuid.uuid4().hex[:20]
    return (f"dr-{prefix}{i:012x}" for i in itertools.count())


def _rows(
    dataset_id: str, records: list[dict[str, Any]], now: int, ids: Iterator[str]
) -> list[dict[str, Any]]:
    """The `evaluation_dataset_records` rows MLflow's `upsert_dataset_records` stores for new records of
    `records_of` (inputs and maybe expectations; no outputs, tags or source), with ids from `ids`."""
    from mlflow.entities.dataset_record import DATASET_RECORD_WRAPPED_OUTPUT_KEY

    # A record's default outputs, {}, wrapped as MLflow stores outputs (serialized per row: one dict serves).
    outputs: dict[str, Any] = {DATASET_RECORD_WRAPPED_OUTPUT_KEY: {}}
    return [
        {
            "dataset_record_id": next(ids),
            "dataset_id": dataset_id,
            "inputs": r["inputs"],
            "outputs": outputs,
            "expectations": r.get("expectations"),
            "tags": {},  # DatasetRecord turns no tags into {}
            "source": None,
            "source_id": None,
            "source_type": None,
            "created_time": now,
            "last_update_time": now,
            "created_by": None,
            "last_updated_by": None,
            "input_hash": _input_hash(r["inputs"]),
        }
        for r in records
    ]


def _insert(
    store: SqlAlchemyStore, dataset_id: str, records: list[dict[str, Any]], ids: Iterator[str]
) -> None:
    """One chunk of new records in one transaction, and the dataset's schema, profile, digest and update time
    as `upsert_dataset_records` sets them after inserting those records."""
    from mlflow.store.tracking.dbmodels.models import SqlEvaluationDataset, SqlEvaluationDatasetRecord

    with store.ManagedSessionMaker(read_only=False) as session:
        store._validate_dataset_accessible(session, dataset_id)
        now = get_current_time_millis()
        session.execute(insert(SqlEvaluationDatasetRecord.__table__), _rows(dataset_id, records, now, ids))
        dataset = store._dataset_query(session).filter(SqlEvaluationDataset.dataset_id == dataset_id)
        info = dataset.with_entities(SqlEvaluationDataset.schema, SqlEvaluationDataset.name).first()
        existing_schema, name = (info[0], info[1]) if info else (None, "")
        schema = store._update_dataset_schema(existing_schema, records)
        profile = store._compute_dataset_profile(session, dataset_id)
        fields: dict[str, Any] = {
            "last_update_time": now,
            "last_updated_by": None,  # MLflow's is a record's `mlflow.user` tag; these records have no tags
            "digest": store._compute_dataset_digest(name, now),
        }
        if schema:
            fields["schema"] = json.dumps(schema)
        if profile:
            fields["profile"] = json.dumps(profile)
        dataset.update(fields)


def write_records(store: AbstractStore, dataset_id: str, cases: Iterable[EvalCase]) -> None:
    """Every case's record into the dataset `dataset_id`, `RECORDS_PER_WRITE` at a time: inserted directly
    on MLflow's SQL store (see the module's docstring), else through the store's `upsert_dataset_records`."""
    direct = _sql_store(store)
    ids = _record_ids()
    for records in _chunks(cases, RECORDS_PER_WRITE):
        if direct is not None:
            try:
                _insert(direct, dataset_id, records, ids)
                continue
            except MlflowException as e:
                if not isinstance(e.__cause__, IntegrityError):
                    raise
                log.debug("dataset %s already holds some of these inputs: merging them", dataset_id)
                direct = None
        store.upsert_dataset_records(dataset_id=dataset_id, records=records)


def _found(client: MlflowClient, experiment_id: str, name: str) -> list[Any]:
    found = client.search_datasets(
        experiment_ids=[experiment_id], filter_string=equals("name", name)[0], max_results=50
    )
    return sorted((d for d in found if d.name == name), key=lambda d: (d.created_time, d.dataset_id))


def ensure_eval_dataset(
    client: MlflowClient, experiment_id: str, eval_set_version: str, cases: Iterable[EvalCase]
) -> str | None:
    """The id of the eval set's evaluation dataset in the experiment, created with its records when
    missing (only then are the cases read, once)."""
    name = dataset_name(eval_set_version)

    def create() -> Any:
        mine = client.create_dataset(
            name, experiment_id=experiment_id, tags={"ragtrack.eval_set_version": eval_set_version}
        )
        try:
            write_records(client._tracking_client.store, mine.dataset_id, cases)
        except BaseException:
            with suppress(Exception):  # the write's error is the one to report
                client.delete_dataset(mine.dataset_id)
            raise
        return mine

    refusals = (
        MlflowException,
        AttributeError,
        NotImplementedError,
    )  # a store without the API: no such method
    with optional("eval set not logged as an MLflow evaluation dataset", refusals):
        kept = find_or_create(
            client.tracking_uri,
            lambda: _found(client, experiment_id, name),
            create,
            key=lambda d: d.dataset_id,
            delete=lambda d: client.delete_dataset(d.dataset_id),
        )
        return kept.dataset_id
    return None

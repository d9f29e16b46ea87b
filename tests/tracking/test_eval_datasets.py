"""An eval set as an MLflow evaluation dataset: one per eval-set version, its records the cases. Real
SQLite."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from mlflow.entities.dataset_record import DatasetRecord
from mlflow.store.tracking.abstract_store import AbstractStore
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
from mlflow.tracking import MlflowClient

from ragtrack.core.types import AnswerExample, EvalCase, ExpectedV2, Gold, RagReference
from ragtrack.tracking import eval_datasets
from ragtrack.tracking.eval_datasets import (
    EVAL_DATASET_TAG,
    dataset_name,
    ensure_eval_dataset,
    records_of,
    write_records,
)


@pytest.fixture
def store(tmp_path, _migrated_store) -> tuple[MlflowClient, str, str]:
    from tests.conftest import clone_store

    uri = clone_store(_migrated_store, tmp_path)
    client = MlflowClient(uri)
    return client, client.create_experiment("datasets"), str(tmp_path / "mlflow.db")


CASES = [
    EvalCase(id="q1", question="Is it refundable?", gold=Gold(answerable=True, gold_ids=["p1"])),
    EvalCase(
        id="r1",
        question="How long?",
        reference=RagReference(ground_truth_answer="7 days", ground_truth_contexts=["c"]),
    ),
]


def _records(db: str) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM evaluation_dataset_records").fetchone()[0]


def test_each_case_is_a_record_with_what_it_expects():
    assert records_of(CASES) == [
        {
            "inputs": {"question": "Is it refundable?", "case_id": "q1"},
            "expectations": {"answerable": True, "gold_ids": ["p1"]},
        },
        {
            "inputs": {"question": "How long?", "case_id": "r1"},
            "expectations": {"expected_response": "7 days", "expected_contexts": ["c"]},
        },
    ]


def test_an_eval_set_version_is_one_dataset_found_again(store):
    client, exp, db = store
    first = ensure_eval_dataset(client, exp, "demo@abc", CASES)
    assert (ensure_eval_dataset(client, exp, "demo@abc", CASES), _records(db)) == (first, 2)


def test_another_version_is_another_dataset(store):
    client, exp, _ = store
    assert ensure_eval_dataset(client, exp, "demo@abc", CASES) != ensure_eval_dataset(
        client, exp, "demo@def", CASES
    )


def test_jobs_creating_one_dataset_at_once_end_on_one(store) -> None:
    client, exp, db = store
    got: list[str | None] = []
    threads = [
        threading.Thread(
            target=lambda: got.append(
                ensure_eval_dataset(MlflowClient(client.tracking_uri), exp, "raced@1", CASES)
            )
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(set(got)), [d.name for d in client.search_datasets(experiment_ids=[exp])]) == (1, ["raced@1"])


def test_a_dataset_name_keeps_only_the_characters_mlflow_keeps():
    assert dataset_name("questions@3f2a+qaset@9b1c") == "questions@3f2a+qaset@9b1c"
    assert dataset_name("my set: v1/2") == "my_set_v1_2"


def test_a_logged_run_names_its_eval_dataset(demo_store):
    client = MlflowClient(demo_store.uri)
    run = client.get_run(demo_store.ids["a"])
    assert client.get_dataset(run.data.tags[EVAL_DATASET_TAG]).name == dataset_name(
        run.data.params["eval_set_version"]
    )


# ---------------------------------------------------------------- records written in chunks

MIXED = [
    EvalCase(
        id="v1",
        question="退款多久到账？",
        expected=ExpectedV2(
            answer_example=AnswerExample(
                target_audience="客户",
                main_topic="退款",
                sub_topic="时限",
                detailed_description=["7 个工作日"],
                original_evidence="审核通过后7个工作日内原路退回",
                predicted_questions=["多久退款？"],
            )
        ),
        gold=Gold(answerable=True, gold_ids=["p1#1"], gold_claim="7 working days"),
    ),
    *CASES,
    EvalCase(id="n1", question="No ground truth here"),
    EvalCase(id="g2", question="Unanswerable?", gold=Gold(answerable=False)),
]


def _content(r: DatasetRecord) -> tuple[Any, ...]:
    """What a record holds, as MLflow reads it back: all but its ids and times (and whether those match)."""
    return (
        r.inputs,
        r.outputs,
        r.expectations,
        r.tags,
        r.source,
        r.source_id,
        r.source_type,
        r.created_by,
        r.last_updated_by,
        r.created_time == r.last_update_time,
    )


def _read(store: AbstractStore, dataset_id: str) -> list[DatasetRecord]:
    """The dataset's records in MLflow's order (as its UI and `EvaluationDataset.records` list them)."""
    return store._load_dataset_records(dataset_id, max_results=None)[0]


def _by_case(store: AbstractStore, dataset_id: str) -> dict[str, tuple[Any, ...]]:
    return {r.inputs["case_id"]: _content(r) for r in _read(store, dataset_id)}


def _rows(db: str, dataset_id: str) -> dict[str, tuple[Any, ...]]:
    """The dataset's rows as the database holds them (JSON as text), by case id: all but ids and times."""
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT inputs, outputs, expectations, tags, source, source_id, source_type, created_by,"
            " last_updated_by, input_hash, created_time = last_update_time"
            " FROM evaluation_dataset_records WHERE dataset_id = ?",
            (dataset_id,),
        ).fetchall()
    return {json.loads(r[0])["case_id"]: r for r in rows}


def _one_call(client: MlflowClient, exp: str, cases: list[EvalCase]) -> str:
    """A dataset written as ragtrack wrote it before chunking: all records in one `upsert_dataset_records`."""
    dataset_id = client.create_dataset("one-call", experiment_id=exp).dataset_id
    client._tracking_client.store.upsert_dataset_records(dataset_id=dataset_id, records=records_of(cases))
    return dataset_id


def _summary(client: MlflowClient, dataset_id: str) -> tuple[Any, ...]:
    """The dataset's schema and profile (what its records hold and how many), and who last updated it."""
    d = client.get_dataset(dataset_id)
    return d.schema, d.profile, d.last_updated_by


class UpsertOnlyStore(SqlAlchemyStore):
    """MLflow's SQL store with `upsert_dataset_records` overridden, as any store but MLflow's own SQL one:
    records reach it through that method, whose record counts per call it keeps."""

    def __init__(self, db_uri: str, default_artifact_root: str) -> None:
        super().__init__(db_uri, default_artifact_root)
        self.calls: list[int] = []

    def upsert_dataset_records(self, dataset_id: str, records: list[dict[str, Any]]) -> dict[str, int]:
        self.calls.append(len(records))
        return super().upsert_dataset_records(dataset_id, records)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 2 records: the 5 cases of `MIXED` are 3 chunks."""
    monkeypatch.setattr(eval_datasets, "RECORDS_PER_WRITE", 2)


def test_chunked_records_read_back_as_the_one_call_upsert_wrote_them(store, small_chunks) -> None:
    client, exp, _ = store
    sql = client._tracking_client.store
    assert eval_datasets._sql_store(sql) is not None  # the direct insert is the path under test
    chunked = ensure_eval_dataset(client, exp, "mixed@1", iter(MIXED))
    assert chunked is not None
    one_call = _one_call(client, exp, MIXED)
    assert _by_case(sql, chunked) == _by_case(sql, one_call) and len(_read(sql, chunked)) == len(MIXED)
    assert _summary(client, chunked) == _summary(client, one_call)


def test_stored_rows_are_the_rows_the_one_call_upsert_stores(store, small_chunks) -> None:
    client, exp, db = store
    chunked = ensure_eval_dataset(client, exp, "mixed@1", MIXED)
    assert chunked is not None
    assert _rows(db, chunked) == _rows(db, _one_call(client, exp, MIXED))


def test_each_chunk_is_in_the_store_before_the_next_case_is_read(store, small_chunks) -> None:
    client, exp, db = store
    stored: list[int] = []

    def stream() -> Iterator[EvalCase]:
        for case in MIXED:
            stored.append(_records(db))  # the records in the store as this case is read
            yield case

    assert ensure_eval_dataset(client, exp, "mixed@1", stream()) is not None
    assert (stored, _records(db)) == ([0, 0, 2, 2, 4], 5)


def test_mlflows_upsert_finds_a_directly_inserted_record_by_its_inputs(store, small_chunks) -> None:
    client, exp, _ = store
    dataset_id = ensure_eval_dataset(client, exp, "mixed@1", MIXED)
    assert dataset_id is not None
    again = {"inputs": {"question": "How long?", "case_id": "r1"}, "expectations": {"note": "x"}}
    assert client._tracking_client.store.upsert_dataset_records(dataset_id, [again]) == {
        "inserted": 0,
        "updated": 1,
    }


def test_inputs_already_written_are_merged_as_the_upsert_merges_them(store, small_chunks) -> None:
    client, exp, _ = store
    twice = [*CASES, EvalCase(id="q1", question="Is it refundable?", gold=Gold(answerable=False))]
    dataset_id = ensure_eval_dataset(client, exp, "twice@1", twice)
    assert dataset_id is not None
    sql, one_call = client._tracking_client.store, _one_call(client, exp, twice)
    assert _by_case(sql, dataset_id) == _by_case(sql, one_call) and len(_read(sql, dataset_id)) == 2
    assert _summary(client, dataset_id) == _summary(client, one_call)


def test_a_store_other_than_mlflows_sql_one_gets_the_chunks_through_its_upsert(
    store, tmp_path, small_chunks
) -> None:
    client, exp, db = store
    other = UpsertOnlyStore(f"sqlite:///{db}", (tmp_path / "artifacts").as_uri())
    dataset_id = client.create_dataset("upsert-only", experiment_id=exp).dataset_id
    write_records(other, dataset_id, iter(MIXED))
    sql, one_call = client._tracking_client.store, _one_call(client, exp, MIXED)
    assert other.calls == [2, 2, 1]
    assert _by_case(sql, dataset_id) == _by_case(sql, one_call)
    assert _summary(client, dataset_id) == _summary(client, one_call)


def test_a_found_dataset_leaves_the_cases_unread(store) -> None:
    client, exp, db = store
    first = ensure_eval_dataset(client, exp, "demo@abc", CASES)

    def unread() -> Iterator[EvalCase]:
        raise AssertionError("the cases of a found dataset were read")
        yield  # a generator

    assert (ensure_eval_dataset(client, exp, "demo@abc", unread()), _records(db)) == (first, 2)


def test_cases_that_fail_midway_leave_no_dataset(store, small_chunks) -> None:
    client, exp, db = store

    def failing() -> Iterator[EvalCase]:
        yield from MIXED[:3]
        raise ValueError("eval file truncated")

    with pytest.raises(ValueError, match="truncated"):
        ensure_eval_dataset(client, exp, "broken@1", failing())
    assert (client.search_datasets(experiment_ids=[exp]), _records(db)) == ([], 0)


def test_mlflow_lists_the_records_in_case_order(store, small_chunks) -> None:
    client, exp, _ = store
    dataset_id = ensure_eval_dataset(client, exp, "mixed@1", MIXED)
    assert dataset_id is not None
    listed = [r.inputs["case_id"] for r in _read(client._tracking_client.store, dataset_id)]
    assert listed == [c.id for c in MIXED]

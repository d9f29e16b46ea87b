"""An eval set as an MLflow evaluation dataset: one per eval-set version, its records the cases. Real
SQLite."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.core.types import EvalCase, Gold, RagReference
from ragtrack.tracking.eval_datasets import EVAL_DATASET_TAG, dataset_name, ensure_eval_dataset, records_of


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

"""An eval set as an MLflow evaluation dataset: one per `eval_set_version`, its records the cases with their
expectations.

MLflow 3's experiment page lists evaluation datasets under **Datasets**. A run's eval set
is found there by its version (the dataset's name, in the characters MLflow keeps) or
created once, with one record per case: `inputs` the question (and the case id),
`expectations` whatever the case carries (a structured answer, a gold verdict and ids, a
ground-truth answer and contexts). The run is tagged with the dataset's id.

MLflow's record call (`EvaluationDataset.merge_records`) writes to the process-global
tracking URI, which ragtrack never sets; the records go through the client's own store
instead (`upsert_dataset_records`), the one use of an MLflow internal here. Jobs creating
the same dataset at once keep the oldest and delete their own. A store without evaluation
datasets costs one warning line and nothing else.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from ragtrack.core.types import EvalCase
from ragtrack.tracking.entities import find_or_create, optional
from ragtrack.tracking.search import equals

__all__ = ["EVAL_DATASET_TAG", "dataset_name", "ensure_eval_dataset", "records_of"]

log = logging.getLogger("ragtrack")

EVAL_DATASET_TAG = "ragtrack.eval_dataset_id"
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.@+\-]+")
MAX_NAME = 250


def dataset_name(eval_set_version: str) -> str:
    return _NOT_IN_NAME.sub("_", eval_set_version)[:MAX_NAME]


def records_of(cases: Sequence[EvalCase]) -> list[dict[str, Any]]:
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


def _found(client: MlflowClient, experiment_id: str, name: str) -> list[Any]:
    found = client.search_datasets(
        experiment_ids=[experiment_id], filter_string=equals("name", name)[0], max_results=50
    )
    return sorted((d for d in found if d.name == name), key=lambda d: (d.created_time, d.dataset_id))


def ensure_eval_dataset(
    client: MlflowClient, experiment_id: str, eval_set_version: str, cases: Sequence[EvalCase]
) -> str | None:
    """The id of the eval set's evaluation dataset in the experiment, created with its records when
    missing."""
    name = dataset_name(eval_set_version)

    def create() -> Any:
        mine = client.create_dataset(
            name, experiment_id=experiment_id, tags={"ragtrack.eval_set_version": eval_set_version}
        )
        client._tracking_client.store.upsert_dataset_records(
            dataset_id=mine.dataset_id, records=records_of(cases)
        )
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

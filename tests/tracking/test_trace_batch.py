"""A run's traces in one transaction: the rows MLflow's own `start_trace` writes, read back alike. Real
SQLite."""

from __future__ import annotations

import sqlite3

import pytest
from mlflow.tracing.client import TracingClient
from mlflow.tracking import MlflowClient

from ragtrack.core.types import ContextChunk
from ragtrack.run.case_traces import CaseAssessment, CaseTrace
from ragtrack.tracking.trace_batch import assessment_row, start_traces
from ragtrack.tracking.traces import _entities
from tests.conftest import clone_store

CASES = [
    CaseTrace(
        case_id=f"c{i}",
        question=f"退款多久到账？ #{i}",
        answer=f"answer {i}",
        latency_ms=12.5 * i,
        contexts=[
            ContextChunk(
                text="退款将在审核通过后7个工作日内原路退回。", source_path="docs/refund.md", id="r#1"
            )
        ],
        assessments=[
            CaseAssessment(name="s/score", value=i / 3, rationale="why" if i else None, source="s@1"),
            CaseAssessment(name="s/label", value="OK", source="s@1"),
            CaseAssessment(name="s/skipped", value=None, rationale="not scored: no `expected`", source="s@1"),
        ],
    )
    for i in range(3)
]


@pytest.fixture
def store(tmp_path, _migrated_store) -> tuple[str, MlflowClient]:
    uri = clone_store(_migrated_store, tmp_path)
    return uri, MlflowClient(uri)


def _written(uri: str, client: MlflowClient, batched: bool) -> list[dict]:
    """The three cases written one way into a new experiment's run, read back without their ids and times."""
    exp = client.create_experiment(f"batched={batched}")
    run_id = client.create_run(exp).info.run_id
    infos = [_entities(c, exp, run_id, 1_700_000_000_000 + i)[0] for i, c in enumerate(CASES)]
    tracing = TracingClient(uri)
    if batched:
        assert start_traces(tracing.store, infos)
    else:
        for info in infos:
            tracing.start_trace(info)
    out = []
    for info in infos:
        got = tracing.get_trace_info(info.trace_id).to_dict()
        for key in ("trace_id", "trace_location"):
            got.pop(key)
        got["tags"].pop("mlflow.artifactLocation")
        got["trace_metadata"].pop("mlflow.sourceRun")
        got["assessments"] = [
            {k: v for k, v in a.items() if k not in ("assessment_id", "trace_id", "span_id", "metadata")}
            for a in got["assessments"]
        ]
        out.append(got)
    return out


def test_batched_traces_read_back_as_the_public_apis_do(store):
    uri, client = store
    assert _written(uri, client, batched=True) == _written(uri, client, batched=False)


def test_batched_traces_write_the_same_rows_in_every_trace_table(store):
    uri, client = store
    _written(uri, client, batched=True)
    _written(uri, client, batched=False)
    db = uri.removeprefix("sqlite:///")
    with sqlite3.connect(db) as con:
        for table, key in (
            ("trace_tags", "request_id"),
            ("trace_request_metadata", "request_id"),
            ("assessments", "trace_id"),
        ):
            per_experiment = dict(
                con.execute(
                    f"SELECT t.experiment_id, count(*) FROM {table} x "
                    f"JOIN trace_info t ON t.request_id = x.{key} GROUP BY t.experiment_id"
                )
            )
            assert (len(per_experiment), len(set(per_experiment.values()))) == (2, 1), (table, per_experiment)


@pytest.mark.parametrize("value", [0.25, 1, True, "HALLUCINATION", None, 3.0e-7, "退款"])
def test_an_assessment_row_is_the_one_mlflows_orm_builds(value):
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.store.tracking.dbmodels.models import SqlAssessments

    from ragtrack.tracking.trace_batch import _given, _internals

    feedback = Feedback(
        name="s/x",
        value=value,
        rationale="why",
        source=AssessmentSource(source_type="CODE", source_id="s@1"),
        trace_id="tr-1",
        span_id="ab",
        metadata={"mlflow.assessment.sourceRunId": "r"},
        create_time_ms=5,
        last_update_time_ms=6,
    )
    feedback.assessment_id = "a-1"
    assert assessment_row(_internals(), feedback, now=7) == _given(
        SqlAssessments.from_mlflow_entity(feedback)
    )


def test_a_store_it_cannot_batch_writes_nothing_and_says_so(store):
    uri, client = store
    exp = client.create_experiment("other")
    info, _ = _entities(CASES[0], exp, client.create_run(exp).info.run_id, 1_700_000_000_000)
    assert start_traces(object(), [info]) is False
    assert TracingClient(uri).search_traces(locations=[exp]) == []

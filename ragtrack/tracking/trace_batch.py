"""A run's traces in one transaction on a SQL store: MLflow's `start_trace`, batched.

MLflow's `SqlAlchemyStore.start_trace` writes one trace per call: it re-reads the
experiment, flushes the trace's rows through the ORM and commits, for every trace (59% of
a 1,000-case run's CPU, measured). `start_traces` writes the same rows for many traces at
once: the experiment read and checked once, the rollup partitions enqueued once, then
every trace's info, tags, metadata and assessments as one multi-row INSERT per table, in
one transaction. The rows are those `start_trace`'s happy path writes (new trace ids, so
never its merge path); tests compare them with the public API's read back, and the
assessment rows with `SqlAssessments.from_mlflow_entity`'s, column by column.

This uses MLflow internals (the SQL models and the store's session maker), so it is used
only when the store is MLflow's `SqlAlchemyStore` and every internal it needs is there;
otherwise `start_traces` returns False having written nothing and the caller uses the
public API, one call per trace.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from mlflow.entities import Assessment, TraceInfo

__all__ = ["assessment_row", "start_traces"]

log = logging.getLogger(__name__)

_NEEDED = (
    "ManagedSessionMaker",
    "get_experiment",
    "_check_experiment_is_active",
    "_get_trace_artifact_location_tag",
)


def _internals() -> SimpleNamespace | None:
    """MLflow's pieces `start_trace` uses, or None when this MLflow lacks one of them."""
    try:
        from mlflow.store.tracking import sqlalchemy_store
        from mlflow.store.tracking.dbmodels import models as sql_models
        from mlflow.store.tracking.utils import sql_trace_rollups, trace_analytics
        from mlflow.tracing import utils as tracing_utils
        from mlflow.tracing.constant import TraceMetadataKey, TraceTagKey

        return SimpleNamespace(
            SqlAlchemyStore=sqlalchemy_store.SqlAlchemyStore,
            SqlTraceInfo=sql_models.SqlTraceInfo,
            SqlTraceTag=sql_models.SqlTraceTag,
            SqlTraceMetadata=sql_models.SqlTraceMetadata,
            SqlAssessments=sql_models.SqlAssessments,
            RollupFamily=sql_trace_rollups.RollupFamily,
            enqueue_rollup_rebuild_partitions=sql_trace_rollups.enqueue_rollup_rebuild_partitions,
            PROMOTED_TRACE_METADATA_KEYS=trace_analytics.PROMOTED_TRACE_METADATA_KEYS,
            analytics_columns_from_metadata=trace_analytics.analytics_columns_from_metadata,
            validate_trace_name=trace_analytics.validate_trace_name,
            assessment_aggregate=trace_analytics.assessment_aggregate,
            generate_assessment_id=tracing_utils.generate_assessment_id,
            TRACE_NAME=TraceTagKey.TRACE_NAME,
            TRACE_INFO_FINALIZED=TraceMetadataKey.TRACE_INFO_FINALIZED,
        )
    except (ImportError, AttributeError) as e:
        log.debug("traces written one by one: %s", e)
        return None


def start_traces(store: object, infos: Sequence[TraceInfo]) -> bool:
    """Write every trace of `infos` (one experiment) in one transaction; False when `store` is not one this
    batches."""
    m = _internals()
    if (
        m is None
        or not isinstance(store, m.SqlAlchemyStore)
        or not infos
        or not all(hasattr(store, n) for n in _NEEDED)
    ):
        return False
    experiment_ids = {info.experiment_id for info in infos}
    if len(experiment_ids) != 1:
        return False
    (experiment_id,) = experiment_ids
    assert experiment_id is not None  # traces.py locates every trace in an experiment
    with store.ManagedSessionMaker(read_only=False) as session:
        experiment = store.get_experiment(experiment_id)
        store._check_experiment_is_active(experiment)
        m.enqueue_rollup_rebuild_partitions(
            session,
            [
                (family, int(experiment_id), [i.request_time for i in infos])
                for family in (m.RollupFamily.TRACE_METRIC, m.RollupFamily.ASSESSMENT)
            ],
        )
        now = int(time.time() * 1000)
        rows: dict[Any, list[dict[str, Any]]] = {
            m.SqlTraceInfo: [],
            m.SqlTraceTag: [],
            m.SqlTraceMetadata: [],
            m.SqlAssessments: [],
        }
        for info in infos:
            _rows(m, store, experiment, info, now, rows)
        for model, table_rows in rows.items():  # parents first: the children's foreign keys name them
            _insert(session, model, table_rows)
    return True


def _insert(session: Any, model: Any, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT `rows` into `model`'s table with Core's executemany (rows with the same columns together); the
    columns a row leaves out get their defaults, as the ORM's flush would give them, without its per-object
    unit of work."""
    from sqlalchemy import insert

    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row), []).append(row)
    for same in groups.values():
        session.execute(insert(model.__table__), same)


def _given(obj: Any) -> dict[str, Any]:
    """The column values an ORM object was given, by column name."""
    from sqlalchemy import inspect

    given = inspect(obj).dict
    return {a.columns[0].key: given[a.key] for a in inspect(type(obj)).column_attrs if a.key in given}


def _rows(
    m: SimpleNamespace,
    store: Any,
    experiment: Any,
    info: TraceInfo,
    now: int,
    rows: dict[Any, list[dict[str, Any]]],
) -> None:
    """Add to `rows` the trace info, tags, metadata and assessments `start_trace` would write for `info`."""
    trace_id = info.trace_id
    assert info.experiment_id is not None  # start_traces took one experiment's traces
    metadata = dict(info.trace_metadata.items())
    rows[m.SqlTraceInfo].append(
        _given(
            m.SqlTraceInfo(
                request_id=trace_id,
                experiment_id=info.experiment_id,
                timestamp_ms=info.request_time,
                execution_time_ms=info.execution_duration,
                status=info.state.value,
                client_request_id=info.client_request_id,
                request_preview=info.request_preview,
                response_preview=info.response_preview,
                trace_name=m.validate_trace_name(info.tags.get(m.TRACE_NAME)),
                **m.analytics_columns_from_metadata(metadata),
            )
        )
    )
    rows[m.SqlTraceTag] += [
        {"request_id": trace_id, "key": k, "value": v} for k, v in info.tags.items() if k != m.TRACE_NAME
    ]
    rows[m.SqlTraceTag].append(_given(store._get_trace_artifact_location_tag(experiment, trace_id)))
    for key in m.PROMOTED_TRACE_METADATA_KEYS:
        metadata.pop(key, None)
    metadata[m.TRACE_INFO_FINALIZED] = "true"
    rows[m.SqlTraceMetadata] += [
        {"request_id": trace_id, "key": k, "value": v} for k, v in sorted(metadata.items())
    ]
    denormalized = {
        "trace_id": trace_id,
        "experiment_id": int(info.experiment_id),
        "trace_timestamp_ms": info.request_time,
    }
    rows[m.SqlAssessments] += [{**assessment_row(m, a, now), **denormalized} for a in info.assessments]


def assessment_row(m: SimpleNamespace, a: Assessment, now: int) -> dict[str, Any]:
    """The `assessments` row of `a`: `SqlAssessments.from_mlflow_entity`'s columns, built without the ORM for
    feedback (18,000 ORM objects cost a 1,000-case run 1.3 s of CPU), through it for other kinds."""
    if a.feedback is None:
        return _given(m.SqlAssessments.from_mlflow_entity(a))
    value = a.feedback.value
    aggregate_value, is_numeric_value = m.assessment_aggregate(value)
    return {
        "assessment_id": a.assessment_id or m.generate_assessment_id(),
        "trace_id": a.trace_id,
        "name": a.name,
        "assessment_type": "feedback",
        "value": json.dumps(value),
        "error": json.dumps(a.feedback.error.to_dictionary()) if a.feedback.error else None,
        "created_timestamp": a.create_time_ms or now,
        "last_updated_timestamp": a.last_update_time_ms or now,
        "source_type": a.source.source_type,
        "source_id": a.source.source_id,
        "run_id": a.run_id,
        "span_id": a.span_id,
        "rationale": a.rationale,
        "overrides": a.overrides,
        "valid": True,
        "assessment_metadata": json.dumps(a.metadata) if a.metadata else None,
        "aggregate_value": aggregate_value,
        "is_numeric_value": is_numeric_value,
    }

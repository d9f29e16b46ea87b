"""A run's traces in one transaction on a SQL store: MLflow's `start_trace`, batched.

MLflow's `SqlAlchemyStore.start_trace` writes one trace per call: it re-reads the
experiment, flushes the trace's rows through the ORM and commits, for every trace (59% of
a 1,000-case run's CPU, measured). `start_traces` writes the same rows for many traces at
once: the experiment read and checked once, every trace's info, tags, metadata and
assessments added in one session, the rollup partitions enqueued once, one flush, one
commit. The rows are those `start_trace`'s happy path writes (new trace ids, so never its
merge path); tests compare them with the public API's, column by column.

This uses MLflow internals (the SQL models and the store's session maker), so it is used
only when the store is MLflow's `SqlAlchemyStore` and every internal it needs is there;
otherwise `start_traces` returns False having written nothing and the caller uses the
public API, one call per trace.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from mlflow.entities import TraceInfo

__all__ = ["start_traces"]

log = logging.getLogger(__name__)

_NEEDED = ("ManagedSessionMaker", "get_experiment", "_check_experiment_is_active", "_get_trace_artifact_location_tag")


def _internals() -> SimpleNamespace | None:
    """MLflow's pieces `start_trace` uses, or None when this MLflow lacks one of them."""
    try:
        from mlflow.store.tracking import sqlalchemy_store
        from mlflow.store.tracking.dbmodels import models as sql_models
        from mlflow.store.tracking.utils import sql_trace_rollups, trace_analytics
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
            TRACE_NAME=TraceTagKey.TRACE_NAME,
            TRACE_INFO_FINALIZED=TraceMetadataKey.TRACE_INFO_FINALIZED,
        )
    except (ImportError, AttributeError) as e:
        log.debug("traces written one by one: %s", e)
        return None


def start_traces(store: object, infos: Sequence[TraceInfo]) -> bool:
    """Write every trace of `infos` (one experiment) in one transaction; False when `store` is not one this batches."""
    m = _internals()
    if m is None or not isinstance(store, m.SqlAlchemyStore) or not infos or not all(hasattr(store, n) for n in _NEEDED):
        return False
    experiment_ids = {info.experiment_id for info in infos}
    if len(experiment_ids) != 1:
        return False
    (experiment_id,) = experiment_ids
    with store.ManagedSessionMaker(read_only=False) as session:
        experiment = store.get_experiment(experiment_id)
        store._check_experiment_is_active(experiment)
        m.enqueue_rollup_rebuild_partitions(
            session,
            [(family, int(experiment_id), [i.request_time for i in infos])
             for family in (m.RollupFamily.TRACE_METRIC, m.RollupFamily.ASSESSMENT)],
        )
        rows = [_row(m, store, experiment, info) for info in infos]
        _insert(session, rows)  # parents first: the children's foreign keys name them
        _insert(session, [child for r in rows for child in r.tags])
        _insert(session, [child for r in rows for child in r.request_metadata])
        _insert(session, [child for r in rows for child in r.assessments])
    return True


def _insert(session: Any, objects: Sequence[Any]) -> None:
    """INSERT the ORM `objects` (one mapped class) with Core's executemany: the column values they were given, the
    columns' defaults for the rest, as the ORM's flush would, without its per-object unit of work."""
    from sqlalchemy import insert, inspect

    if not objects:
        return
    mapper = inspect(type(objects[0]))
    columns = [(a.key, a.columns[0].key) for a in mapper.column_attrs]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for obj in objects:
        given = inspect(obj).dict
        row = {column: given[key] for key, column in columns if key in given}
        groups.setdefault(tuple(row), []).append(row)
    for rows in groups.values():
        session.execute(insert(mapper.local_table), rows)


def _row(m: SimpleNamespace, store: Any, experiment: Any, info: TraceInfo) -> Any:
    """The `SqlTraceInfo` (with its tags, metadata and assessments) `start_trace` would write for `info`."""
    trace_id = info.trace_id
    metadata = dict(info.trace_metadata.items())
    row = m.SqlTraceInfo(
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
    row.tags = [m.SqlTraceTag(request_id=trace_id, key=k, value=v)
                for k, v in info.tags.items() if k != m.TRACE_NAME]
    row.tags.append(store._get_trace_artifact_location_tag(experiment, trace_id))
    for key in m.PROMOTED_TRACE_METADATA_KEYS:
        metadata.pop(key, None)
    metadata[m.TRACE_INFO_FINALIZED] = "true"
    row.request_metadata = [m.SqlTraceMetadata(request_id=trace_id, key=k, value=v) for k, v in sorted(metadata.items())]
    assessments = []
    for a in info.assessments:
        sql = m.SqlAssessments.from_mlflow_entity(a)
        sql.trace_id, sql.experiment_id, sql.trace_timestamp_ms = trace_id, int(info.experiment_id), info.request_time
        assessments.append(sql)
    row.assessments = assessments
    return row

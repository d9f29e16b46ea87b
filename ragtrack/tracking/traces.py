"""Per-case traces with assessments, linked to their run: what MLflow 3's evaluation view lists and compares.

Each case becomes one trace in the run's experiment: inputs `{"question": …}`, output the
raw answer, a root span (plus a retriever span holding the contexts the model saw),
metadata `mlflow.sourceRun = <run id>` (the link the UI searches by) and
`ragtrack.case_id`, and one `Feedback` per per-case column (`ragtrack.run.case_traces`), with
source `CODE <scorer>@<version>` and `mlflow.assessment.sourceRunId`, as
`mlflow.genai.evaluate` writes them. Two runs' rows pair in the UI's compare mode by equal
`request_preview`, so the inputs are serialised the same way in every run.

How they are written, and why (measured: bench/bench_traces.py):
the trace entities are built here and written synchronously: on a SQL store all of a
run's traces with their assessments in one transaction (`trace_batch.start_traces`: 2.3
ms CPU per case of 10 assessments against 9.3 ms for one `start_trace` per case), against a tracking server
one `start_trace(info)` per case (`REMOTE_WORKERS` requests in flight); then the spans in
batches (`log_spans`). MLflow's own paths are slower (`mlflow.genai.evaluate` ~100 s for 1,000
cases) or lose data: the fluent `start_span` + `log_feedback` loop exports traces on a
background queue, which drops traces when it overflows and makes `log_feedback` fail
with "Trace … not found" while a trace is still queued. Nothing here is asynchronous:
when `log_case_traces` returns, every trace and assessment is in the store, and a
failure raises (the run then ends FAILED).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mlflow.entities import Assessment, AssessmentSource, Feedback, Span, TraceInfo, TraceLocation, TraceState
from mlflow.tracing.client import TracingClient
from mlflow.tracing.constant import (
    TRACE_REQUEST_ID_PREFIX,
    TRACE_REQUEST_RESPONSE_PREVIEW_MAX_LENGTH_OSS,
    AssessmentMetadataKey,
    SpanAttributeKey,
    TraceMetadataKey,
    TraceTagKey,
)
from pydantic import BaseModel, ConfigDict

from ragtrack.run.case_traces import CaseTrace
from ragtrack.tracking.remote import is_http
from ragtrack.tracking.trace_batch import start_traces

__all__ = [
    "CASE_ID_KEY",
    "SPAN_BATCH",
    "TraceCounts",
    "count_run_traces",
    "log_case_traces",
    "request_preview",
]

CASE_ID_KEY = "ragtrack.case_id"  # trace metadata: the case's id in the eval set
# MLflow's column for it is VARCHAR(50): a longer case id is kept in the metadata only
MAX_CLIENT_REQUEST_ID = 50
SPAN_BATCH = 500  # spans per log_spans call (one database session each)
REMOTE_WORKERS = 4  # start_trace requests in flight at once against a tracking server
_SCHEMA_VERSION = "3"  # mlflow.trace_schema.version of the traces MLflow itself writes


class TraceCounts(BaseModel):
    """How many traces and assessments a run has (or was given)."""

    model_config = ConfigDict(frozen=True)

    traces: int
    assessments: int


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _preview(text: str) -> str:
    limit = TRACE_REQUEST_RESPONSE_PREVIEW_MAX_LENGTH_OSS
    return text if len(text) <= limit else text[: limit - 3] + "..."


def request_preview(question: str) -> str:
    """The trace's request preview: what the UI shows as the request and pairs runs' rows by."""
    return _preview(_json({"question": question}))


def _span(
    trace_id: str,
    span_id: int,
    parent_id: int | None,
    name: str,
    kind: str,
    start_ns: int,
    end_ns: int,
    inputs: Any,
    outputs: Any,
) -> Span:
    return Span.from_dict(
        {
            "trace_id": trace_id,
            "span_id": f"{span_id:016x}",
            "parent_span_id": f"{parent_id:016x}" if parent_id is not None else None,
            "name": name,
            "start_time_unix_nano": start_ns,
            "end_time_unix_nano": end_ns,
            "status": {"code": "OK", "message": ""},
            "attributes": {
                SpanAttributeKey.REQUEST_ID: _json(trace_id),
                SpanAttributeKey.SPAN_TYPE: _json(kind),
                SpanAttributeKey.INPUTS: _json(inputs),
                SpanAttributeKey.OUTPUTS: _json(outputs),
            },
        }
    )


def _entities(
    case: CaseTrace, experiment_id: str, run_id: str, request_ms: int, model_id: str | None = None
) -> tuple[TraceInfo, list[Span]]:
    """The trace of one case (its assessments inside) and its spans."""
    otel_id = uuid.uuid4().int
    trace_id = f"{TRACE_REQUEST_ID_PREFIX}{otel_id:032x}"
    duration_ms = max(0, round(case.latency_ms)) if case.latency_ms is not None else 0
    start_ns, end_ns = request_ms * 1_000_000, (request_ms + duration_ms) * 1_000_000
    root_id, retriever_id = (otel_id & (2**64 - 1)) or 1, (otel_id >> 64) or 2
    inputs = {"question": case.question}
    spans = [_span(trace_id, root_id, None, "case", "CHAIN", start_ns, end_ns, inputs, case.answer)]
    if case.contexts:
        documents = [
            {
                "page_content": c.text,
                "metadata": {k: v for k, v in (("doc_uri", c.source_path), ("chunk_id", c.id)) if v},
            }
            for c in case.contexts
        ]
        spans.append(
            _span(
                trace_id,
                retriever_id,
                root_id,
                "retrieved contexts",
                "RETRIEVER",
                start_ns,
                start_ns,
                inputs,
                documents,
            )
        )
    root_span_id = spans[0].span_id
    assessments: list[Assessment] = [
        Feedback(
            name=a.name,
            value=a.value,
            rationale=a.rationale,
            source=AssessmentSource(source_type="CODE", source_id=a.source),
            trace_id=trace_id,
            span_id=root_span_id,
            metadata={AssessmentMetadataKey.SOURCE_RUN_ID: run_id},
            create_time_ms=request_ms,
            last_update_time_ms=request_ms,
        )
        for a in case.assessments
    ]
    info = TraceInfo(
        trace_id=trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=request_ms,
        state=TraceState.OK,
        request_preview=request_preview(case.question),
        response_preview=_preview(case.answer),
        client_request_id=case.case_id if len(case.case_id) <= MAX_CLIENT_REQUEST_ID else None,
        execution_duration=duration_ms,
        trace_metadata={
            TraceMetadataKey.SOURCE_RUN: run_id,
            **({TraceMetadataKey.MODEL_ID: model_id} if model_id else {}),
            "mlflow.trace_schema.version": _SCHEMA_VERSION,
            CASE_ID_KEY: case.case_id,
        },
        tags={TraceTagKey.TRACE_NAME: case.case_id},
        assessments=assessments,
    )
    return info, spans


def log_case_traces(
    uri: str,
    experiment_id: str,
    run_id: str,
    cases: Sequence[CaseTrace],
    *,
    model_id: str | None = None,
    batch: bool = True,
) -> TraceCounts:
    """Write one trace per case, linked to `run_id` (and to the version `model_id`), synchronously; returns
    what was written. `batch=False` writes one `start_trace` per case on a SQL store too (MLflow's public
    path, to compare).

    Request times step back 1 ms per case in case order: the UI lists the newest trace first, so it shows the
    cases in eval-set order.
    """
    client = TracingClient(uri)
    now_ms = int(time.time() * 1000)
    built = [
        _entities(case, experiment_id, run_id, now_ms + len(cases) - 1 - i, model_id)
        for i, case in enumerate(cases)
    ]
    infos = [info for info, _ in built]
    if is_http(uri):  # one HTTP request per trace: several in flight hide the round trips
        with ThreadPoolExecutor(REMOTE_WORKERS, thread_name_prefix="ragtrack-traces") as pool:
            for _ in pool.map(client.start_trace, infos):  # an error raises here, once the others are done
                pass
    elif not (batch and start_traces(client.store, infos)):  # a SQL store takes them in one transaction
        for info in infos:
            client.start_trace(info)
    spans = [span for _, case_spans in built for span in case_spans]
    for start in range(0, len(spans), SPAN_BATCH):
        client.log_spans(experiment_id, spans[start : start + SPAN_BATCH])
    return TraceCounts(traces=len(cases), assessments=sum(len(info.assessments) for info in infos))


def count_run_traces(uri: str, experiment_id: str, run_id: str) -> TraceCounts:
    """Read back every trace linked to `run_id` and count it and its assessments."""
    client = TracingClient(uri)
    traces = assessments = 0
    token = None
    while True:
        page = client.search_traces(
            locations=[experiment_id], run_id=run_id, max_results=500, include_spans=False, page_token=token
        )
        traces += len(page)
        assessments += sum(len(t.info.assessments) for t in page)
        token = page.token
        if not token:
            return TraceCounts(traces=traces, assessments=assessments)

"""A run's traces in one transaction on a PostgreSQL tracking store (`tracking.uri=postgresql://…`): the rows
MLflow's own `start_trace` writes, read back alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.devserver import ComponentError, Postgres
from tests.tracking.test_trace_batch import _written


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[str, MlflowClient]]:
    server = Postgres()
    try:
        server.start()
        uri = server.create_database("batch")
    except ComponentError as e:
        pytest.skip(str(e))
    try:
        yield uri, MlflowClient(uri)
    finally:
        server.stop()


def test_batched_traces_read_back_as_the_public_apis_do_on_postgresql(store):
    uri, client = store
    assert _written(uri, client, batched=True) == _written(uri, client, batched=False)

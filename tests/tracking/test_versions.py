"""Each configuration as an MLflow LoggedModel: named, found again by its stamps, linked to the run's metrics
and traces."""

from __future__ import annotations

import threading

import pytest
from mlflow.tracing.client import TracingClient
from mlflow.tracking import MlflowClient

from ragtrack.tracking.sink import MODEL_ID_TAG
from ragtrack.tracking.versions import VERSION_KEY_TAG, Version, ensure_version


@pytest.fixture(scope="module")
def store(tmp_path_factory, _migrated_store) -> tuple[MlflowClient, str]:
    from tests.conftest import clone_store

    root = tmp_path_factory.mktemp("versions")
    client = MlflowClient(clone_store(_migrated_store, root))
    return client, client.create_experiment("versions")


def _version(key: str = "k1") -> Version:
    return Version(key=key, name=f"model + adapter · prompt v1 · idx@{key}", params={"prompt_sha256": key})


def test_a_version_is_created_once_and_found_again(store):
    client, exp = store
    run = client.create_run(exp).info.run_id
    first = ensure_version(client, exp, _version("once"), run)
    assert ensure_version(client, exp, _version("once"), run) == first


def test_another_configuration_is_another_version(store):
    client, exp = store
    run = client.create_run(exp).info.run_id
    assert ensure_version(client, exp, _version("one"), run) != ensure_version(
        client, exp, _version("two"), run
    )


def test_jobs_creating_one_version_at_once_end_on_one(store) -> None:
    client, exp = store
    run = client.create_run(exp).info.run_id
    got: list[str | None] = []
    threads = [
        threading.Thread(
            target=lambda: got.append(
                ensure_version(MlflowClient(client.tracking_uri), exp, _version("raced"), run)
            )
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    left = client.search_logged_models([exp], filter_string=f"tags.`{VERSION_KEY_TAG}` = 'raced'")
    assert (len(set(got)), [m.model_id for m in left]) == (1, [got[0]])


def test_a_version_is_named_as_a_person_reads_it(demo_store):
    client = MlflowClient(demo_store.uri)
    run = client.get_run(demo_store.ids["a"])
    index_sha = run.data.params["index_version"].rpartition("@")[2][:8]
    name = client.get_logged_model(run.data.tags[MODEL_ID_TAG]).name
    assert name == f"Qwen2_5-7B-Instruct + lora_b · prompt v2 · demo@{index_sha}"


def test_a_logged_run_links_its_metrics_to_its_version(demo_store):
    client = MlflowClient(demo_store.uri)
    run = client.get_run(demo_store.ids["a"])
    model = client.get_logged_model(run.data.tags[MODEL_ID_TAG])
    assert {m.key for m in model.metrics if m.run_id == run.info.run_id} >= {"eval_json_v2/eval_score_avg"}


def test_runs_of_one_configuration_share_one_version(demo_store):
    client = MlflowClient(demo_store.uri)
    assert (
        len({client.get_run(demo_store.ids[k]).data.tags[MODEL_ID_TAG] for k in ("a", "same", "planted")})
        == 1
    )


def test_each_trace_carries_its_version(demo_store):
    client = MlflowClient(demo_store.uri)
    run = client.get_run(demo_store.ids["a"])
    traces = TracingClient(demo_store.uri).search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, max_results=5
    )
    assert {t.info.trace_metadata.get("mlflow.modelId") for t in traces} == {run.data.tags[MODEL_ID_TAG]}

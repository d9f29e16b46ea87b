"""A run's prompt in MLflow's Prompt Registry: one version per distinct content, the run linked to it. Real
SQLite."""

from __future__ import annotations

import json
import threading

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.tracking.prompt_registry import link_prompt, prompt_name
from ragtrack.tracking.sink import PROMPT_URI_TAG


@pytest.fixture
def store(tmp_path, _migrated_store) -> tuple[MlflowClient, str]:
    from tests.conftest import clone_store

    client = MlflowClient(clone_store(_migrated_store, tmp_path))
    return client, client.create_experiment("prompted")


def _link(client: MlflowClient, exp: str, text: str, sha: str, label: str = "v1") -> str | None:
    return link_prompt(client, client.create_run(exp).info.run_id, "prompted", exp, text, sha, label)


def test_the_same_bytes_reuse_one_version(store):
    client, exp = store
    assert (
        _link(client, exp, "Answer {{question}}", "s1")
        == _link(client, exp, "Answer {{question}}", "s1")
        == ("prompts:/prompted-prompt/1")
    )


def test_new_bytes_make_a_new_version(store):
    client, exp = store
    _link(client, exp, "Answer {{question}}", "s1")
    assert _link(client, exp, "Answer briefly: {{question}}", "s2", "v2") == "prompts:/prompted-prompt/2"


def test_the_run_is_linked_to_its_prompt_version(store):
    client, exp = store
    run_id = client.create_run(exp).info.run_id
    link_prompt(client, run_id, "prompted", exp, "Answer {{question}}", "s1", "v1")
    linked = json.loads(client.get_run(run_id).data.tags["mlflow.linkedPrompts"])
    assert linked == [{"name": "prompted-prompt", "version": "1"}]


def test_jobs_registering_one_prompt_at_once_end_on_one_version(store) -> None:
    client, exp = store
    got: list[str | None] = []
    threads = [
        threading.Thread(
            target=lambda: got.append(
                _link(MlflowClient(client.tracking_uri), exp, "Same {{question}}", "same")
            )
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    left = [v.version for v in client.search_prompt_versions("prompted-prompt")]
    assert (len(set(got)), len(left)) == (1, 1)


def test_a_prompt_name_keeps_only_the_characters_the_registry_allows():
    assert prompt_name("team/rag eval: q3") == "team-rag-eval-q3-prompt"


def test_a_logged_run_names_its_prompt_version(demo_store):
    run = MlflowClient(demo_store.uri).get_run(demo_store.ids["a"])
    assert run.data.tags[PROMPT_URI_TAG] == "prompts:/demo-prompt/1"


def test_the_prompt_is_listed_on_the_experiments_prompts_page(store):
    client, exp = store
    _link(client, exp, "Answer {{question}}", "s1")
    assert exp in client.get_prompt("prompted-prompt").tags["_mlflow_experiment_ids"].split(",")


def test_the_prompt_is_listed_on_its_experiment_only(store):
    client, exp = store
    _link(client, exp, "Answer {{question}}", "s1")
    _link(client, exp, "Answer briefly: {{question}}", "s2", "v2")
    assert client.get_prompt("prompted-prompt").tags["_mlflow_experiment_ids"] == f",{exp},"

"""A config naming a Prompt Registry version (`prompt.uri`): fetched, hashed, archived and proven by audit.
Real SQLite."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.cli import main
from ragtrack.app.hydra_app import execute
from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha256_bytes
from ragtrack.inputs.config import RunConfig
from ragtrack.tracking.sink import PROMPT_URI_TAG
from tests.conftest import make_config

TEXT = "Answer {{question}} from:\n{{context}}\n"


@pytest.fixture
def registered(demo_files, fresh_store) -> MlflowClient:
    client = MlflowClient(fresh_store)
    client.register_prompt("team-answer", "Old {{question}}")
    client.register_prompt("team-answer", TEXT)
    client.set_prompt_alias("team-answer", "prod", 2)
    return client


def _run(files, uri: str) -> tuple[MlflowClient, str]:
    cfg = make_config(files, prompt={"uri": uri})
    execute(cfg)
    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name("tests")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    return client, run.info.run_id


def test_the_registry_text_is_what_the_run_hashes_and_archives(demo_files, registered):
    client, run_id = _run(demo_files, "prompts:/team-answer/2")
    assert client.get_run(run_id).data.params["prompt_sha256"] == sha256_bytes(TEXT.encode())
    archived = client.download_artifacts(run_id, "prompt/team-answer-v2.md")
    assert open(archived, encoding="utf-8").read() == TEXT


def test_an_alias_is_recorded_as_the_version_it_pointed_to(demo_files, registered):
    client, run_id = _run(demo_files, "prompts:/team-answer@prod")
    manifest = json.loads(open(client.download_artifacts(run_id, "manifest.json"), encoding="utf-8").read())
    assert manifest["prompt_uri"] == "prompts:/team-answer/2"


def test_the_run_is_linked_to_the_registry_version_and_registers_no_copy(demo_files, registered):
    client, run_id = _run(demo_files, "prompts:/team-answer/2")
    tags = client.get_run(run_id).data.tags
    assert (tags[PROMPT_URI_TAG], json.loads(tags["mlflow.linkedPrompts"])) == (
        "prompts:/team-answer/2",
        [{"name": "team-answer", "version": "2"}],
    )
    assert [p.name for p in client.search_prompts()] == ["team-answer"]


def test_audit_reads_the_registry_version_again(demo_files, registered, capsys):
    client, run_id = _run(demo_files, "prompts:/team-answer/2")
    capsys.readouterr()
    assert main(["audit", run_id, "--tracking-uri", client.tracking_uri]) == 0
    assert (
        "✓ prompt prompts:/team-answer/2: the registry's text hashes to prompt_sha256"
        in capsys.readouterr().out
    )


def test_audit_fails_when_the_registry_version_is_gone(demo_files, registered, capsys):
    client, run_id = _run(demo_files, "prompts:/team-answer/2")
    client.delete_prompt_version("team-answer", "2")
    capsys.readouterr()
    assert main(["audit", run_id, "--tracking-uri", client.tracking_uri]) == 1
    assert (
        "✗ prompt prompts:/team-answer/2: prompts:/team-answer/2: prompt.uri: not found"
        in capsys.readouterr().out
    )


def test_a_missing_version_is_bad_input_naming_the_uri(demo_files, registered):
    with pytest.raises(
        InputError, match=r"prompts:/team-answer/9: prompt.uri: not found in the Prompt Registry"
    ):
        _run(demo_files, "prompts:/team-answer/9")


def test_a_chat_prompt_is_bad_input(demo_files, registered):
    registered.register_prompt("chat", [{"role": "user", "content": "{{question}}"}])
    with pytest.raises(InputError, match="a chat prompt"):
        _run(demo_files, "prompts:/chat/1")


def test_a_file_and_a_uri_at_once_is_bad_input(demo_files):
    with pytest.raises(
        InputError, match=r"prompt: a prompt is a file \(`path`\) or a Prompt Registry version"
    ):
        make_config(
            demo_files, prompt={"version": "v1", "path": str(demo_files["prompt"]), "uri": "prompts:/p/1"}
        )


@pytest.mark.parametrize("uri", ["team-answer", "prompts:/team-answer", "prompts:/a/b/1", "models:/m/1"])
def test_a_malformed_uri_is_bad_input(demo_files, uri):
    with pytest.raises(InputError, match="is not a prompt URI"):
        make_config(demo_files, prompt={"uri": uri})


def test_the_label_comes_from_the_uri_unless_given(demo_files):
    labels = [
        make_config(demo_files, prompt=p).prompt.label
        for p in (
            {"uri": "prompts:/p/3"},
            {"uri": "prompts:/p@prod"},
            {"uri": "prompts:/p/3", "version": "v9"},
        )
    ]
    assert labels == ["p-v3", "p@prod", "v9"]


def test_a_config_from_before_prompt_uri_keeps_its_hash():
    data = {
        "model": {"id": "Qwen/Qwen2.5-7B-Instruct"},
        "adapter": {"name": "lora_a", "id": "lumen/lora-a@v1"},
        "index": {"name": "test", "path": "chunks.jsonl"},
        "prompt": {"version": "v1", "path": "v1.md"},
        "eval_set": {"name": "tiny", "files": ["q.json"]},
        "generator": {"name": "replay", "params": {"path": "p.jsonl"}},
        "scorers": {"eval_json_v2": {}},
    }
    assert (
        RunConfig.from_container(data).sha256
        == "2517dd9d94ba1b431331336958639da9ade03df3656ce1936cbdf8b70967cd7c"
    )


def test_the_runner_alone_cannot_fetch_a_registry_prompt(demo_files):
    from ragtrack.run.runner import prepare

    with pytest.raises(
        InputError, match="prompt.uri: a Prompt Registry prompt is fetched from a tracking store"
    ):
        prepare(make_config(demo_files, prompt={"uri": "prompts:/p/1"}))

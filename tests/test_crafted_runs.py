"""Runs crafted by someone else: audit, rescore and score --config contact no host, send no secret,
read no file and write no path that the run names, and prove nothing from outside the run's archive."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path

import pytest
import yaml

from ragtrack.app.cli import main
from ragtrack.inputs.config import load_run_config
from tests.demo_runs import DEMO, artifact_dir
from tests.llm_server import LLMServer, reply

VERDICT = json.dumps(
    {"analysis": "ok", "accuracy": 8, "completeness": 6, "clarity": 10, "reason": "r", "suggestion": "s"}
)


@pytest.fixture
def canary(monkeypatch):
    """A secret in the environment under the names a crafted config asks for."""
    value = "canary-" + secrets.token_hex(16)
    for name in ("RAGTRACK_TEST_CANARY", "AWS_SECRET_ACCESS_KEY", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.setenv(name, value)
    return value


@pytest.fixture
def listener():
    with LLMServer(script=[reply(VERDICT)]) as srv:
        yield srv


def _set_param(store, run_id: str, key: str, value: str) -> None:
    con = sqlite3.connect(store.tmp / "mlflow.db")
    with con:
        assert (
            con.execute(
                "UPDATE params SET value = ? WHERE run_uuid = ? AND key = ?", (value, run_id, key)
            ).rowcount
            == 1
        )
    con.close()


def crafted_config_run(store, scorers: dict) -> str:
    """A run whose archived config adds `scorers`, logged consistently (its config_sha256 matches)."""
    run_id = store.new_run("crafted")
    path = artifact_dir(store.uri, run_id) / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["scorers"].update(scorers)
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    _set_param(store, run_id, "config_sha256", load_run_config(path).sha256)
    return run_id


def evil_scorers(url: str, outside: Path) -> dict:
    judge = {
        "base_url": url,
        "model": "m",
        "api_key_env": "RAGTRACK_TEST_CANARY",
        "cache_dir": str(outside / "cache"),
    }
    return {
        "rubric_judge": {**judge, "prompt_path": str(outside / "secret.md")},
        "rag": {
            "backend": "llm",
            "llm": {**judge, "api_key_env": "AWS_SECRET_ACCESS_KEY"},
            "model": str(outside),
        },
    }


def _run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.fixture
def outside(tmp_path):
    """A folder the crafted run names: a secret file in it must not be read, nothing may be written in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("SECRET-FILE {{question}} {{answer}} {{context}}", encoding="utf-8")
    return folder


def _nothing_reached(listener, canary, out, err, store, outside):
    assert listener.count == 0
    assert canary not in out + err
    assert "SECRET-FILE" not in out + err
    assert not _files_holding(store.tmp, canary)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_audit_of_a_crafted_run_calls_nothing_and_names_what_it_refused(
    demo_store, capsys, canary, listener, outside
):
    run_id = crafted_config_run(demo_store, evil_scorers(listener.url, outside))
    code, out, err = _run(capsys, "audit", run_id, "--tracking-uri", demo_store.uri)
    _nothing_reached(listener, canary, out, err, demo_store, outside)
    assert len([x for x in out.splitlines() if x.startswith("– re-score: not made:")]) == 1
    for key in ("rubric_judge.base_url", "rubric_judge.prompt_path", "rag.llm.base_url", "rag.model"):
        assert f"scorers.{key} = " in out, key
    assert code == 0 and "✓ config.yaml" in out, out


def test_rescore_of_a_crafted_run_is_refused_and_logs_nothing(demo_store, capsys, canary, listener, outside):
    from mlflow.tracking import MlflowClient

    run_id = crafted_config_run(demo_store, evil_scorers(listener.url, outside))
    client = MlflowClient(demo_store.uri)
    exp = client.get_experiment_by_name("crafted").experiment_id
    before = len(client.search_runs([exp]))
    code, out, err = _run(capsys, "rescore", run_id, "--tracking-uri", demo_store.uri)
    _nothing_reached(listener, canary, out, err, demo_store, outside)
    assert code == 2 and "scorers.rubric_judge.base_url = " in err and "give --llm-base-url URL" in err
    assert len(client.search_runs([exp])) == before


def test_score_with_a_crafted_config_is_refused(demo_store, capsys, canary, listener, outside):
    run_id = crafted_config_run(demo_store, evil_scorers(listener.url, outside))
    config = artifact_dir(demo_store.uri, run_id) / "config.yaml"
    code, out, err = _run(
        capsys,
        "score",
        "--eval-set",
        str(DEMO / "qaset.json"),
        "--predictions",
        str(DEMO / "predictions" / "lora_b__v2.jsonl"),
        "--config",
        str(config),
    )
    _nothing_reached(listener, canary, out, err, demo_store, outside)
    assert code == 2 and "scorers.rag.llm.base_url = " in err


def test_rescore_calls_the_server_the_caller_names_and_sends_no_key_the_run_names(
    demo_store, capsys, canary, listener, outside, monkeypatch
):
    judge = evil_scorers(listener.url, outside)["rubric_judge"]
    del judge["prompt_path"]
    run_id = crafted_config_run(demo_store, {"rubric_judge": judge})
    monkeypatch.setenv("MY_JUDGE_KEY", "my-own-key")
    with LLMServer(script=[reply(VERDICT)]) as mine:
        code, out, err = _run(
            capsys,
            "rescore",
            run_id,
            "--llm-base-url",
            mine.url,
            "--llm-api-key-env",
            "MY_JUDGE_KEY",
            "--tracking-uri",
            demo_store.uri,
        )
        keys = {v for r in mine.requests for k, v in r["headers"].items() if k.lower() == "authorization"}
    assert code == 0, err
    _nothing_reached(listener, canary, out, err, demo_store, outside)
    assert (mine.count, keys) == (52, {"Bearer my-own-key"})
    assert f"scorers.rubric_judge.base_url: the run's '{listener.url}' replaced by yours" in err


# ------------------------------------------------------------------ manifest paths


def _edit_manifest(store, run_id: str, **fields) -> None:
    path = artifact_dir(store.uri, run_id) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for key, value in fields.items():
        if key == "eval0":
            manifest["eval_files"][0]["artifact_path"] = value
        else:
            manifest[key] = value
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _failed(out: str) -> dict[str, str]:
    return dict(line[2:].split(": ", 1) for line in out.splitlines() if line.startswith("✗ "))


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("eval0", str(DEMO / "questions.json"), "eval_files[0].artifact_path"),
        ("prompt_artifact_path", "../../../../../../../../etc/hostname", "prompt_artifact_path"),
        (
            "predictions_artifact_path",
            str(DEMO / "predictions" / "lora_b__v2.jsonl"),
            "predictions_artifact_path",
        ),
    ],
)
def test_a_manifest_path_outside_the_run_fails_the_audit_naming_its_field(
    demo_store, capsys, field, value, named
):
    run_id = demo_store.new_run("crafted")
    _edit_manifest(demo_store, run_id, **{field: value})
    code, out, _ = _run(capsys, "audit", run_id, "--tracking-uri", demo_store.uri)
    refused = [
        k
        for k, v in _failed(out).items()
        if f"{named}: {value!r} lies outside the run's artifacts: refused" in v
    ]
    assert code == 1 and refused, out


def test_a_manifest_path_outside_the_run_stops_rescore_naming_its_field(demo_store, capsys):
    run_id = demo_store.new_run("crafted")
    _edit_manifest(demo_store, run_id, predictions_artifact_path="/etc/hostname")
    code, _, err = _run(capsys, "rescore", run_id, "--tracking-uri", demo_store.uri)
    assert code == 2 and "manifest.json: predictions_artifact_path: '/etc/hostname' lies outside" in err, err


def test_a_clean_copy_beside_a_tampered_archive_fails_the_audit(demo_store, capsys):
    run_id = demo_store.new_run("crafted")
    inputs = artifact_dir(demo_store.uri, run_id) / "inputs" / "0"
    (inputs / "clean.json").write_bytes((inputs / "questions.json").read_bytes())
    (inputs / "questions.json").write_text("garbage", encoding="utf-8")
    _edit_manifest(demo_store, run_id, eval0="inputs/0/clean.json")
    code, out, _ = _run(capsys, "audit", run_id, "--tracking-uri", demo_store.uri)
    failed = _failed(out)
    assert code == 1 and "archive" in failed, out
    assert (
        "eval_files[0].artifact_path is 'inputs/0/clean.json', where the run archives it at "
        "'inputs/0/questions.json'" in failed["archive"]
    )
    assert "inputs/0/questions.json is archived but named by no manifest field" in failed["archive"]


def test_an_archived_file_that_differs_from_its_manifest_hash_fails_the_audit(demo_store, capsys):
    run_id = demo_store.new_run("crafted")
    _edit_manifest(demo_store, run_id, predictions_sha1="0" * 40)
    code, out, _ = _run(capsys, "audit", run_id, "--tracking-uri", demo_store.uri)
    assert code == 1 and "the manifest records 000000000000…" in _failed(out)["archive"], out

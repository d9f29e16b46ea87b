"""Job keys and run reuse: the same job reuses its finished run; new inputs, scorer parameters or force score
again."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.hydra_app import execute_job
from ragtrack.run.jobkey import JOB_KEY_TAG, job_key
from ragtrack.run.runner import prepare
from tests.conftest import make_config


def _n_runs(cfg) -> int:
    client = MlflowClient(cfg.tracking.uri)
    exp = client.get_experiment_by_name(cfg.tracking.experiment)
    assert exp is not None
    return len(client.search_runs([exp.experiment_id]))


def test_same_job_prepared_twice_has_the_same_key(demo_files):
    cfg = make_config(demo_files)
    assert job_key(prepare(cfg)) == job_key(prepare(cfg))


def test_changed_predictions_bytes_change_the_key(demo_files):
    cfg = make_config(demo_files)
    before = job_key(prepare(cfg))
    demo_files["good"].write_text(demo_files["good"].read_text() + "\n", encoding="utf-8")
    assert job_key(prepare(cfg)) != before


def test_changed_scorer_parameter_changes_the_key(demo_files):
    a = make_config(demo_files)
    b = make_config(demo_files, scorers={"eval_json_v2": {"jaccard_threshold": 0.8}, "refusal_citation": {}})
    assert job_key(prepare(a)) != job_key(prepare(b))


def test_where_the_run_is_logged_is_not_in_the_key(demo_files):
    a = make_config(demo_files)
    b = make_config(
        demo_files, tracking={"uri": "sqlite:////elsewhere/mlflow.db", "experiment": "other", "force": True}
    )
    assert job_key(prepare(a)) == job_key(prepare(b))


def test_second_identical_job_reuses_the_finished_run(demo_files, fresh_store):
    cfg = make_config(demo_files)
    _, first = execute_job(cfg, reuse=True)
    results, second = execute_job(cfg, reuse=True)
    assert (results, second.run_id, second.reused, _n_runs(cfg)) == ([], first.run_id, True, 1)


def test_force_scores_again(demo_files, fresh_store):
    cfg = make_config(demo_files)
    execute_job(cfg, reuse=True)
    forced = make_config(demo_files, tracking={**cfg.tracking.model_dump(), "force": True})
    _, outcome = execute_job(forced, reuse=True)
    assert (outcome.reused, _n_runs(cfg)) == (False, 2)


def test_failed_run_is_not_reused(demo_files, fresh_store):
    bad = {"name": "callable", "params": {"target": "tests.generators.sample_fns:broken"}}
    cfg = make_config(demo_files, generator=bad)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="model server said no"):
            execute_job(cfg, reuse=True)
    assert _n_runs(cfg) == 2


def test_changed_eval_file_scores_again(demo_files, fresh_store):
    cfg = make_config(demo_files)
    execute_job(cfg, reuse=True)
    items = json.loads(demo_files["qaset"].read_text(encoding="utf-8"))
    demo_files["qaset"].write_text(json.dumps(items[:2]), encoding="utf-8")
    _, outcome = execute_job(cfg, reuse=True)
    assert (outcome.reused, _n_runs(cfg)) == (False, 2)


def test_only_the_outermost_run_of_a_staged_job_carries_the_key(demo_files, fresh_store):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    execute_job(cfg)
    client = MlflowClient(cfg.tracking.uri)
    runs = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    keyed = sorted(r.data.tags["ragtrack.stage"] for r in runs if JOB_KEY_TAG in r.data.tags)
    assert keyed == ["staged"]

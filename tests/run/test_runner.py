"""The pure runner: config in, RunResult out, no MLflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file, sha256_file
from ragtrack.run.runner import run, run_job
from tests.conftest import make_config


def test_perfect_predictions_score_100(demo_files):
    result = run(make_config(demo_files))
    assert result.metrics["eval_json_v2/eval_score_avg"] == 100.0


def test_manifest_carries_every_version_stamp(demo_files):
    m = run(make_config(demo_files)).manifest
    assert (m.model_id, m.adapter_id, m.prompt_version) == (
        "Qwen/Qwen2.5-7B-Instruct",
        "lumen/lora-a@v1",
        "v1",
    )
    assert m.prompt_sha256 == sha256_file(demo_files["prompt"])
    assert m.index_version == f"chunks@{sha1_file(demo_files['chunks'])}"
    assert m.eval_set_version == (
        f"questions@{sha1_file(demo_files['questions'])}+qaset@{sha1_file(demo_files['qaset'])}"
    )


def test_replayed_file_hash_is_recorded(demo_files):
    m = run(make_config(demo_files)).manifest
    assert m.generator_provenance == {"predictions_sha1": sha1_file(demo_files["good"])}


def test_missing_and_unmatched_predictions_are_counted(demo_files):
    result = run(make_config(demo_files, predictions="bad"))
    assert (result.metrics["predictions/n_missing"], result.metrics["predictions/n_unmatched"]) == (1.0, 1.0)


def test_gates_become_metrics(demo_files):
    result = run(make_config(demo_files, predictions="bad"))
    assert (result.metrics["gate/dev100"], result.metrics["gate/all"]) == (0.0, 0.0)


def test_same_inputs_give_identical_results(demo_files):
    cfg = make_config(demo_files, predictions="bad")
    a, b = run(cfg), run(cfg)
    assert (a.metrics, a.outputs) == (b.metrics, b.outputs)


def test_dev_subset_records_its_draw(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 3})
    result = run(cfg, dev_subset=True)
    assert (
        result.manifest.subset.ids == [c.id for c in result.eval_set.cases]
        and len(result.eval_set.cases) == 2
    )


def test_staged_job_stops_after_failed_dev_gate(demo_files):
    cfg = make_config(demo_files, predictions="bad", stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    assert [r.manifest.stage for r in run_job(cfg)] == ["dev"]


def test_staged_job_runs_full_set_after_passing_dev_gate(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    assert [r.manifest.stage for r in run_job(cfg)] == ["dev", "full"]


def test_staged_job_needs_its_gate(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_gate": "nope"})
    with pytest.raises(InputError, match="stages.dev_gate"):
        run_job(cfg)


def test_unknown_config_key_names_it(demo_files):
    with pytest.raises(InputError, match="tracking.experimnt"):
        make_config(demo_files, tracking={"experimnt": "x"})


def test_unknown_scorer_param_fails_before_loading(demo_files):
    with pytest.raises(InputError, match="jacard"):
        run(make_config(demo_files, scorers={"eval_json_v2": {"jacard": 0.5}}))


def test_dev_subset_larger_than_eval_set_names_stages_dev_n(demo_files):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 100})
    with pytest.raises(
        InputError, match=r"stages\.dev_n: subset size n=100 must be between 1 and the 3 cases"
    ):
        run_job(cfg)


@pytest.mark.parametrize("predictions", ["base__v1.jsonl", "lora_b__v2.jsonl"])
def test_score_files_without_rows_scores_the_same(predictions: str) -> None:
    """`with_rows=False` (`ragtrack score` without --json) leaves out the per-case rows and nothing else."""
    from ragtrack.run.runner import score_files
    from ragtrack.scorers import build_scorer

    demo = Path(__file__).resolve().parents[2] / "experiments" / "demo"
    files = [str(demo / "questions.json"), str(demo / "qaset.json")]
    scorers = [build_scorer("eval_json_v2"), build_scorer("refusal_citation")]
    full = score_files(files, demo / "predictions" / predictions, scorers, [])
    lean = score_files(files, demo / "predictions" / predictions, scorers, [], with_rows=False)
    assert lean.rows == [] and len(full.rows) == len(full.eval_set.cases)
    assert lean.model_dump(exclude={"rows"}) == full.model_dump(exclude={"rows"})
    assert json.dumps(lean.metrics) == json.dumps(full.metrics)  # same order, same bits

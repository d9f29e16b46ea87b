"""`ragtrack rescore`: the archived answers scored again into a new run linked to its source."""

from __future__ import annotations

import json

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.cli import main
from ragtrack.core.errors import InputError
from ragtrack.run.rescore import RESCORED_FROM_TAG, apply_overrides


def _rescore(capsys, store, run_id, *overrides):
    capsys.readouterr()
    code = main(["rescore", run_id, *overrides, "--tracking-uri", store.uri])
    out = capsys.readouterr()
    assert code == 0, out.err
    new_id = out.out.split()[2]  # "rescored run <id> ..."
    return MlflowClient(store.uri).get_run(new_id)


def _metrics(run):
    return {k: v for k, v in run.data.metrics.items() if not k.startswith("timing/")}


@pytest.fixture(scope="module")
def source(demo_store):
    return MlflowClient(demo_store.uri).get_run(demo_store.new_run("rescore"))


def test_rescore_without_overrides_equals_its_source_and_is_linked_to_it(demo_store, source, capsys):
    new = _rescore(capsys, demo_store, source.info.run_id)
    assert new.data.tags[RESCORED_FROM_TAG] == source.info.run_id
    assert new.info.experiment_id == source.info.experiment_id and new.info.run_id != source.info.run_id
    assert _metrics(new) == _metrics(source)
    stamps = ("model_id", "adapter_id", "prompt_sha256", "eval_set_version", "index_version")
    assert {k: new.data.params[k] for k in stamps} == {k: source.data.params[k] for k in stamps}


def test_a_scorer_override_changes_only_what_it_scores_and_compare_shows_it(demo_store, source, capsys):
    new = _rescore(capsys, demo_store, source.info.run_id, "scorers.eval_json_v2.min_evidence_chars=400")
    assert new.data.params["scorer/eval_json_v2/min_evidence_chars"] == "400"
    assert (
        new.data.metrics["eval_json_v2/original_evidence"]
        < source.data.metrics["eval_json_v2/original_evidence"]
    )
    assert new.data.metrics["refusal_citation/precision"] == source.data.metrics["refusal_citation/precision"]
    capsys.readouterr()
    ids = [source.info.run_id, new.info.run_id]
    assert (
        main(["compare", *ids, "--allow-different-scorers", "--json", "--tracking-uri", demo_store.uri]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    verdicts = {m["metric"]: m["verdict"] for m in doc["metrics"]}
    assert (
        verdicts["eval_json_v2/original_evidence"] == "worse"
        and verdicts["refusal_citation/precision"] == "no significant difference"
    )
    assert {"name": "scorer/eval_json_v2/min_evidence_chars", "a": "40", "b": "400"} in doc["stamps"]


def test_selecting_scorers_scores_with_those_only(demo_store, source, capsys):
    new = _rescore(capsys, demo_store, source.info.run_id, "scorers=refusal_citation")
    assert not [k for k in new.data.metrics if k.startswith("eval_json_v2/")]
    assert new.data.metrics["refusal_citation/precision"] == source.data.metrics["refusal_citation/precision"]


def test_a_rescored_run_passes_its_own_audit(demo_store, source, capsys):
    new = _rescore(
        capsys, demo_store, source.info.run_id, "scorers.refusal_citation.refusal_token=i cannot answer"
    )
    assert main(["audit", new.info.run_id, "--tracking-uri", demo_store.uri]) == 0


def test_a_rescored_run_records_its_sources_artifacts_not_a_temporary_folder(demo_store, source, capsys):
    new = _rescore(capsys, demo_store, source.info.run_id)
    src = f"runs:/{source.info.run_id}/"
    assert new.data.params["generator/replay/path"].startswith(src + "predictions/")
    manifest = MlflowClient(demo_store.uri).download_artifacts(new.info.run_id, "manifest.json")
    assert json.loads(open(manifest, encoding="utf-8").read())["prompt_path"].startswith(src + "prompt/")


def test_options_may_follow_the_overrides(demo_store, source, capsys):
    capsys.readouterr()
    code = main(["rescore", source.info.run_id, "--tracking-uri", demo_store.uri, "scorers=refusal_citation"])
    assert code == 0 and "no longer scored: eval_json_v2/" in capsys.readouterr().out


def test_an_override_outside_the_scoring_is_one_line_and_no_run(demo_store, source, capsys):
    client = MlflowClient(demo_store.uri)
    before = len(client.search_runs([source.info.experiment_id]))
    capsys.readouterr()
    code = main(["rescore", source.info.run_id, "prompt.version=v3", "--tracking-uri", demo_store.uri])
    err = capsys.readouterr().err
    assert (code, err.count("\n")) == (2, 1) and "rescore changes only the scoring" in err
    assert len(client.search_runs([source.info.experiment_id])) == before


# ------------------------------------------------------------------ overrides on a logged config


LOGGED = {
    "scorers": {"eval_json_v2": {"jaccard_threshold": 0.72}, "refusal_citation": None},
    "gates": {"G": ["x >= 1"]},
}


def test_a_parameter_override_is_typed_as_yaml():
    out = apply_overrides(
        LOGGED, ["scorers.eval_json_v2.jaccard_threshold=0.8", "scorers.refusal_citation.refusal_token=n/a"]
    )
    assert out["scorers"] == {
        "eval_json_v2": {"jaccard_threshold": 0.8},
        "refusal_citation": {"refusal_token": "n/a"},
    }


def test_selecting_scorers_keeps_their_logged_parameters():
    out = apply_overrides(LOGGED, ["scorers=eval_json_v2"])
    assert out["scorers"] == {"eval_json_v2": {"jaccard_threshold": 0.72}}


def test_gates_can_be_replaced_or_emptied():
    assert apply_overrides(LOGGED, ["gates.G=[x >= 2]"])["gates"] == {"G": ["x >= 2"]}
    assert apply_overrides(LOGGED, ["gates={}"])["gates"] == {}


@pytest.mark.parametrize("override", ["model.id=other", "scorers", "scorers=", "scorers.x=[1"])
def test_bad_overrides_are_input_errors_naming_them(override):
    with pytest.raises(InputError) as ei:
        apply_overrides(LOGGED, [override])
    assert override in str(ei.value)

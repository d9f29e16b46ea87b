"""Archiving a run's inputs: unique paths, bytes verified against the hashes recorded while scoring."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file
from ragtrack.inputs.archive import ArchivedRun, write_archive
from ragtrack.inputs.predictions import match_prediction_file
from ragtrack.run.runner import run
from tests.conftest import make_config


def _same_named(demo_files, tmp_path):
    """The demo's question_v2 and qaset files, both named `cases.json`, in two folders."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copyfile(demo_files["questions"], a / "cases.json")
    shutil.copyfile(demo_files["qaset"], b / "cases.json")
    return make_config(
        demo_files, eval_set={"name": "same", "files": [str(a / "cases.json"), str(b / "cases.json")]}
    )


def test_same_named_eval_files_get_unique_paths(demo_files, tmp_path):
    m = write_archive(run(_same_named(demo_files, tmp_path)), tmp_path / "archive")
    assert [f.artifact_path for f in m.eval_files] == ["inputs/0/cases.json", "inputs/1/cases.json"]


def test_archived_eval_files_are_byte_identical(demo_files, tmp_path):
    m = write_archive(run(_same_named(demo_files, tmp_path)), tmp_path / "archive")
    assert [sha1_file(tmp_path / "archive" / f.artifact_path) for f in m.eval_files] == [
        f.sha1 for f in m.eval_files
    ]


def test_an_archived_path_resolving_out_of_the_archive_is_refused_naming_its_field(demo_files, tmp_path):
    root = tmp_path / "archive"
    m = write_archive(run(_same_named(demo_files, tmp_path)), root)
    archived = root / "inputs" / "0" / "cases.json"
    archived.unlink()
    archived.symlink_to(demo_files["questions"])
    with pytest.raises(
        InputError, match=r"manifest.json: eval_files\[0\].artifact_path: 'inputs/0/cases.json' lies outside"
    ):
        _ = ArchivedRun(root=root, manifest=m).eval_paths


def test_an_archived_path_inside_the_archive_is_read(demo_files, tmp_path):
    root = tmp_path / "archive"
    m = write_archive(run(_same_named(demo_files, tmp_path)), root)
    assert ArchivedRun(root=root, manifest=m).eval_paths == [
        root.resolve() / f.artifact_path for f in m.eval_files
    ]


def test_replayed_predictions_are_archived_byte_for_byte(demo_files, tmp_path):
    m = write_archive(run(make_config(demo_files, predictions="bad")), tmp_path / "archive")
    assert (m.predictions_artifact_path, m.predictions_sha1) == (
        "predictions/bad.jsonl",
        sha1_file(demo_files["bad"]),
    )


def test_a_file_changed_during_the_run_is_an_error(demo_files, tmp_path):
    result = run(make_config(demo_files))
    demo_files["qaset"].write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="changed while the run was scoring it"):
        write_archive(result, tmp_path / "archive")


def test_generated_predictions_are_archived_in_the_predictions_format(demo_files, tmp_path):
    cfg = make_config(
        demo_files,
        generator={"name": "callable", "params": {"target": "tests.generators.sample_fns:structured"}},
    )
    result = run(cfg)
    m = write_archive(result, tmp_path / "archive")
    again = match_prediction_file(tmp_path / "archive" / m.predictions_artifact_path, result.eval_set.cases)
    assert again.predictions == result.generation.predictions


def test_dev_stage_archives_its_subset_file(demo_files, tmp_path):
    cfg = make_config(demo_files, stages={"enabled": True, "dev_n": 2, "dev_seed": 0})
    result = run(cfg, dev_subset=True)
    m = write_archive(result, tmp_path / "archive")
    archived = json.loads((tmp_path / "archive" / m.eval_files[0].artifact_path).read_text(encoding="utf-8"))
    assert [item["id"] for item in archived] == [
        c.id for c in result.eval_set.cases if c.expected is not None
    ]


# ------------------------------------------------------------------ re-scoring from the artifacts alone


def _rescore(client, run, dest, capsys) -> dict[str, float | None]:
    """Download the run's artifacts and `ragtrack score --config` the archived files, as a user would."""
    from ragtrack.app.cli import main

    local = Path(client.download_artifacts(run.info.run_id, "", str(dest)))
    m = json.loads((local / "manifest.json").read_text(encoding="utf-8"))
    args = [
        "score",
        "--config",
        str(local / "config.yaml"),
        "--json",
        "--predictions",
        str(local / m["predictions_artifact_path"]),
    ]
    for f in m["eval_files"]:
        args += ["--eval-set", str(local / f["artifact_path"])]
    capsys.readouterr()
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def _logged(run) -> dict[str, float]:
    return {k: v for k, v in run.data.metrics.items() if not k.startswith("timing/")}


def test_rescore_from_artifacts_equals_logged_metrics(demo_files, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    from ragtrack.app.hydra_app import execute

    same = _same_named(demo_files, tmp_path)
    cfg = make_config(demo_files, predictions="bad", eval_set=same.eval_set.model_dump())
    execute(cfg)
    client = MlflowClient(cfg.tracking.uri)
    (run,) = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    rescored = _rescore(client, run, tmp_path / "dl", capsys)
    assert {k: v for k, v in rescored.items() if v is not None} == _logged(run)


def test_rescore_of_a_dev_stage_equals_its_logged_metrics(demo_files, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    from ragtrack.app.hydra_app import execute

    # seed 4 draws a1 and a2: u1's prediction lies outside the subset, zz's matches no case
    cfg = make_config(demo_files, predictions="bad", stages={"enabled": True, "dev_n": 2, "dev_seed": 4})
    execute(cfg)
    client = MlflowClient(cfg.tracking.uri)
    runs = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    (dev,) = [r for r in runs if r.data.tags["ragtrack.stage"] == "dev"]
    rescored = _rescore(client, dev, tmp_path / "dl", capsys)
    assert dev.data.metrics["predictions/n_unmatched"] == 1.0
    assert {k: v for k, v in rescored.items() if v is not None} == _logged(dev)


# ------------------------------------------------------------------ compressed inputs


@pytest.fixture
def small_limit(monkeypatch):
    """Inputs over 200 bytes are compressed (the demo files are; real ones over 1 MiB)."""
    import ragtrack.inputs.archive

    monkeypatch.setattr(ragtrack.inputs.archive, "COMPRESS_ABOVE", 200)


def test_a_large_input_is_archived_compressed_with_its_size(demo_files, tmp_path, small_limit):
    m = write_archive(run(make_config(demo_files)), tmp_path / "archive")
    rel = m.eval_files[0].artifact_path
    assert (
        rel == "inputs/0/questions.json.gz"
        and m.archived_sizes[rel] == demo_files["questions"].stat().st_size
    )
    assert not (tmp_path / "archive" / "inputs/0/questions.json").exists()


def test_a_compressed_input_reads_back_byte_for_byte(demo_files, tmp_path, small_limit):
    m = write_archive(run(make_config(demo_files)), tmp_path / "archive")
    archived = ArchivedRun(root=tmp_path / "archive", manifest=m)
    assert archived.eval_path(0).read_bytes() == demo_files["questions"].read_bytes()


def test_compressing_the_same_bytes_gives_the_same_archive(demo_files, tmp_path, small_limit):
    result = run(make_config(demo_files))
    write_archive(result, tmp_path / "a"), write_archive(result, tmp_path / "b")
    rel = "inputs/0/questions.json.gz"
    assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()


def test_an_input_inflating_beyond_its_recorded_size_is_refused(demo_files, tmp_path, small_limit):
    m = write_archive(run(make_config(demo_files)), tmp_path / "archive")
    rel = m.eval_files[0].artifact_path
    lying = m.model_copy(update={"archived_sizes": {**m.archived_sizes, rel: 100}})
    with pytest.raises(InputError, match="inflates beyond the 100 bytes the manifest records: refused"):
        ArchivedRun(root=tmp_path / "archive", manifest=lying).eval_path(0)


def test_a_damaged_compressed_input_is_refused(demo_files, tmp_path, small_limit):
    m = write_archive(run(make_config(demo_files)), tmp_path / "archive")
    (tmp_path / "archive" / m.eval_files[0].artifact_path).write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(InputError, match="not a readable gzip file"):
        ArchivedRun(root=tmp_path / "archive", manifest=m).eval_path(0)


def test_a_run_with_compressed_inputs_rescores_and_passes_its_audit(
    demo_files, tmp_path, capsys, small_limit
):
    from mlflow.tracking import MlflowClient

    from ragtrack.app.cli import main
    from ragtrack.app.hydra_app import execute

    cfg = make_config(demo_files, predictions="bad")
    execute(cfg)
    client = MlflowClient(cfg.tracking.uri)
    (logged,) = client.search_runs([client.get_experiment_by_name("tests").experiment_id])
    assert {a.path for a in client.list_artifacts(logged.info.run_id, "inputs/0")} == {
        "inputs/0/questions.json.gz"
    }
    rescored = _rescore(client, logged, tmp_path / "dl", capsys)
    assert {k: v for k, v in rescored.items() if v is not None} == _logged(logged)
    assert main(["audit", logged.info.run_id, "--tracking-uri", cfg.tracking.uri]) == 0


def test_a_compressed_input_named_by_a_winding_path_inflates_inside_the_run(
    demo_files, tmp_path, small_limit
):
    root = tmp_path / "w" / "run"
    m = write_archive(run(make_config(demo_files)), root)
    winding = "../../w/run/inputs/0/questions.json.gz"  # resolves inside the run from its root
    files = [m.eval_files[0].model_copy(update={"artifact_path": winding}), *m.eval_files[1:]]
    sizes = {**m.archived_sizes, winding: m.archived_sizes["inputs/0/questions.json.gz"]}
    path = ArchivedRun(
        root=root, manifest=m.model_copy(update={"eval_files": files, "archived_sizes": sizes})
    ).eval_path(0)
    assert path.resolve().is_relative_to(root.resolve()) and not (tmp_path / "w" / "w").exists()

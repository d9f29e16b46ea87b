"""Bad input to `compare`, `audit` and `rescore`: one line on stderr and exit 2, never a traceback."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.app.cli import main
from tests.demo_runs import artifact_dir

COMMANDS = [["audit"], ["rescore"], ["compare", "RUN"]]  # compare: RUN stands for a good run to pair with


def _run(capsys, uri, command, run_id, good):
    capsys.readouterr()
    args = [a.replace("RUN", good) for a in command] + [run_id, "--tracking-uri", uri]
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line(code, out, err):
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_unknown_run_id(demo_store, capsys, command):
    err = _one_line(*_run(capsys, demo_store.uri, command, "0123456789abcdef", demo_store.ids["a"]))
    assert f"run 0123456789abcdef: no run in {demo_store.uri} has this id, id prefix or run name" in err


@pytest.fixture(scope="module")
def foreign_runs(demo_store):
    """A run made with plain MLflow (no ragtrack artifacts), and one tagged as a sweep's parent."""
    client = MlflowClient(demo_store.uri)
    exp = client.create_experiment("plain")
    plain = client.create_run(exp, run_name="other tool").info.run_id
    client.log_metric(plain, "accuracy", 0.9)
    client.set_terminated(plain)
    parent = client.create_run(exp, tags={"ragtrack.stage": "sweep"}).info.run_id
    return plain, parent


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_run_without_ragtrack_artifacts(demo_store, foreign_runs, capsys, command):
    err = _one_line(*_run(capsys, demo_store.uri, command, foreign_runs[0], demo_store.ids["a"]))
    assert f"run {foreign_runs[0]}: has no manifest.json: not a run logged by ragtrack" in err


def test_sweep_parent_points_to_its_children(demo_store, foreign_runs, capsys):
    err = _one_line(*_run(capsys, demo_store.uri, ["audit"], foreign_runs[1], ""))
    assert "is the parent run of a sweep: its per-case results are in its child runs" in err


def test_missing_store_is_one_line_and_not_created(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'none' / 'mlflow.db'}"
    err = _one_line(*_run(capsys, uri, ["audit"], "abc", ""))
    assert "no tracking store here" in err and not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("artifact", "command", "message"),
    [
        ("cases.parquet", ["compare", "RUN"], "cases.parquet: not a readable Parquet table"),
        ("manifest.json", ["audit"], "manifest.json: not valid JSON"),
    ],
    ids=["compare-cases", "audit-manifest"],
)
def test_damaged_artifact_is_one_line(demo_store, capsys, artifact, command, message):
    run_id = demo_store.new_run()
    (artifact_dir(demo_store.uri, run_id) / artifact).write_bytes(b"\x00damaged")
    err = _one_line(*_run(capsys, demo_store.uri, command, run_id, demo_store.ids["a"]))
    assert message in err

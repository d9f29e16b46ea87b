"""MLflow's fluent API (what the plugins are reached through) pointed at a SQLite store in a temp dir."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ragtrack.tracking.store import open_client
from tests.processes import ROOT, run

DEMO = ROOT / "experiments" / "demo"
EVAL_SET = [DEMO / "questions.json", DEMO / "qaset.json"]
PREDICTIONS = DEMO / "predictions" / "base__v1.jsonl"


def fluent_store(tmp: Path, mp: pytest.MonkeyPatch) -> tuple[MlflowClient, str]:
    """A store and an experiment (artifacts under `tmp`) that `mlflow.start_run()` and friends use: (client,
    experiment id)."""
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = open_client(uri)
    exp_id = client.create_experiment("plugins", artifact_location=(tmp / "artifacts").as_uri())
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.setenv("MLFLOW_EXPERIMENT_ID", exp_id)
    return client, exp_id


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[MlflowClient, str]:
    return fluent_store(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def module_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MlflowClient, str]]:
    with pytest.MonkeyPatch.context() as mp:
        yield fluent_store(tmp_path_factory.mktemp("store"), mp)


@pytest.fixture(scope="module")
def ragtrack_score() -> dict:
    """`ragtrack score --json` of the demo's base/v1 answers with both scorers, as the command prints it:
    {"metrics", "cases"}."""
    args = [
        "score",
        *(f"--eval-set={f}" for f in EVAL_SET),
        f"--predictions={PREDICTIONS}",
        "--scorer=eval_json_v2",
        "--scorer=refusal_citation",
        "--json",
    ]
    proc = run(args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def git_repo(tmp_path: Path) -> tuple[Path, str]:
    """A git work tree with one commit: (its path, the commit)."""
    path = tmp_path / "repo"
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return path, subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()

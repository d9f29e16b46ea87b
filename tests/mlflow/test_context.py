"""`mlflow.run_context_provider`: `mlflow.start_run()` runs get ragtrack's version and git state when
RAGTRACK_CONTEXT=1."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import mlflow

from ragtrack import __version__
from ragtrack.mlflow.context import RagtrackRunContext
from tests.processes import env

TAGS = ("ragtrack.version", "ragtrack.git_commit", "ragtrack.git_dirty")


def _tags_of_a_plain_run(client) -> dict[str, str | None]:
    with mlflow.start_run() as run:
        pass
    tags = client.get_run(run.info.run_id).data.tags
    return {k: tags.get(k) for k in TAGS}


def test_provider_is_registered_as_an_mlflow_entry_point():
    # Fails until the package is (re)installed: `pip install -e .` registers pyproject's entry points.
    (ep,) = entry_points(group="mlflow.run_context_provider", name="ragtrack")
    assert ep.load() is RagtrackRunContext


def test_importing_the_provider_before_mlflow_registers_it_without_a_warning():
    # importing the provider first used to make MLflow's entry-point load meet it half-imported
    probe = "import ragtrack.mlflow.context"
    out = subprocess.run(
        [sys.executable, "-W", "default", "-c", probe], env=env(), capture_output=True, text=True, timeout=120
    )
    assert (out.returncode, out.stderr) == (0, "")


def test_start_run_gets_ragtrack_version_and_git_state(module_store, git_repo, monkeypatch):
    repo, commit = git_repo
    monkeypatch.chdir(repo)
    monkeypatch.setenv("RAGTRACK_CONTEXT", "1")
    assert _tags_of_a_plain_run(module_store[0]) == {
        "ragtrack.version": __version__,
        "ragtrack.git_commit": commit,
        "ragtrack.git_dirty": "false",
    }


def test_a_dirty_work_tree_is_tagged_dirty(module_store, git_repo, monkeypatch):
    repo, _ = git_repo
    (repo / "a.txt").write_text("changed\n")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("RAGTRACK_CONTEXT", "1")
    assert _tags_of_a_plain_run(module_store[0])["ragtrack.git_dirty"] == "true"


def test_without_ragtrack_context_runs_get_no_ragtrack_tags(module_store, monkeypatch):
    monkeypatch.delenv("RAGTRACK_CONTEXT", raising=False)
    assert _tags_of_a_plain_run(module_store[0]) == dict.fromkeys(TAGS)

"""Connecting to a tracking store for a ragtrack command: open it, reap dead runs, find the experiment.

Every command that opens a store goes through `connect`, so any of them checks that the store
can be used (one clear line when it cannot, see `remote`) and ends the runs that a vanished
process left RUNNING (once per process and store). Experiments are resolved in one
place, so that a job, its sweep parent and an enclosing `mlflow run` agree on where runs go.
"""

from __future__ import annotations

import os

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from pydantic import BaseModel, ConfigDict

from ragtrack.tracking.reaper import reap_dead_runs
from ragtrack.tracking.remote import check_store, is_http, use_restart_budget
from ragtrack.tracking.store import open_client, sqlite_path

__all__ = ["EXPERIMENT_KIND_TAG", "Placement", "artifact_root", "connect", "place_run", "project_run_id"]

# MLflow 3's UI opens an experiment of this kind on its runs table (not the GenAI traces view).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"

_reaped: set[tuple[int, str]] = set()  # (pid, uri): where this process has checked and reaped already


def connect(uri: str) -> MlflowClient:
    """A client for `uri` (opened safely, see `store`); the first call per process also checks the
    store (`InputError` naming the URI when it cannot be used) and reaps this host's dead runs there."""
    first = (os.getpid(), uri) not in _reaped
    if is_http(uri):
        use_restart_budget()
    if first:
        check_store(uri)
    client = open_client(uri)
    if first:
        reap_dead_runs(client)
        _reaped.add((os.getpid(), uri))
    return client


def artifact_root(uri: str) -> str | None:
    """For a local SQLite store, artifacts go in `mlartifacts/` beside the database."""
    db = sqlite_path(uri)
    return (db.parent / "mlartifacts").as_uri() if db is not None else None


def project_run_id() -> str | None:
    """The run `mlflow run` created for this process (it exports MLFLOW_RUN_ID), if any."""
    return os.environ.get("MLFLOW_RUN_ID") or None


class Placement(BaseModel):
    """Where a new run goes: its experiment, and the run it nests under (if any)."""

    model_config = ConfigDict(frozen=True)

    experiment_id: str
    experiment_name: str
    parent_run_id: str | None


def _experiment_by_name(client: MlflowClient, name: str, uri: str) -> str:
    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            return client.create_experiment(
                name, artifact_location=artifact_root(uri), tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
            )
        except MlflowException:  # another process created it first
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
    if EXPERIMENT_KIND_TAG not in exp.tags:
        client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return exp.experiment_id


def place_run(client: MlflowClient, uri: str, experiment: str, parent_run_id: str | None) -> Placement:
    """A run nests in its parent's experiment; under `mlflow run`, in the project run's; else in
    `experiment`."""
    parent_run_id = parent_run_id or project_run_id()
    if parent_run_id:
        exp_id = client.get_run(parent_run_id).info.experiment_id
    else:
        exp_id = _experiment_by_name(client, experiment, uri)
    return Placement(
        experiment_id=exp_id, experiment_name=client.get_experiment(exp_id).name, parent_run_id=parent_run_id
    )

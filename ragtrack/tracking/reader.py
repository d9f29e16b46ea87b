"""Reading logged runs back: a run's record, its artifacts, the runs of an experiment; adding to them later.

`compare`, `audit`, `rescore` and `calibrate` read runs through here. A store that does not exist is
bad input (reading must never create one), and so is a run id the store does not know.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow.entities import Metric, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from pydantic import BaseModel, ConfigDict

from ragtrack.core.errors import InputError
from ragtrack.core.hashing import sha1_file
from ragtrack.core.redact import redact_text
from ragtrack.tracking.search import all_experiment_ids, all_runs, equals
from ragtrack.tracking.session import connect
from ragtrack.tracking.store import sqlite_path

if TYPE_CHECKING:
    import pandas

__all__ = [
    "CASES_ARTIFACT",
    "LoggedRun",
    "download_artifacts",
    "find_runs",
    "get_run",
    "log_artifacts",
    "log_calibration",
    "read_cases",
]

CASES_ARTIFACT = "cases.parquet"  # the per-case table every stage run logs

RUN_STAGES = (
    "full",
    "dev",
)  # runs that carry a stage's artifacts (a sweep's or staged job's parent does not)


class LoggedRun(BaseModel):
    """A run as the store records it: where it lives, how it ended, its params, metrics and tags."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]


_ID_PREFIX = re.compile(r"[0-9a-f]{4,31}")  # a shortened run id (MLflow's are 32 hex digits)


def _client(uri: str) -> MlflowClient:
    db = sqlite_path(uri)
    if db is not None and not db.is_file():
        raise InputError(
            str(db),
            "no tracking store here (run from the directory holding mlflow.db, "
            "or set --tracking-uri / MLFLOW_TRACKING_URI)",
        )
    return connect(uri)


def _logged(client: MlflowClient, run) -> LoggedRun:  # noqa: ANN001 (mlflow.entities.Run)
    exp = client.get_experiment(run.info.experiment_id)
    return LoggedRun(
        run_id=run.info.run_id,
        run_name=run.info.run_name or "",
        experiment_id=run.info.experiment_id,
        experiment_name=exp.name,
        status=run.info.status,
        params=dict(run.data.params),
        metrics=dict(run.data.metrics),
        tags=dict(run.data.tags),
    )


def get_run(uri: str, ref: str) -> LoggedRun:
    """The run `ref` names: its id, a unique prefix of its id, or its run name (unique in the store).

    A reference that names no run, or several, is bad input listing the candidates.
    """
    client = _client(uri)
    try:
        return _logged(client, client.get_run(ref))
    except MlflowException:
        pass
    experiments = all_experiment_ids(client)
    found = {
        r.info.run_id: r
        for r in all_runs(client, experiments, equals("attributes.run_name", ref)[0])
        if r.info.run_name == ref
    }
    if not found and _ID_PREFIX.fullmatch(ref):
        found = {r.info.run_id: r for r in all_runs(client, experiments) if r.info.run_id.startswith(ref)}
    if not found:
        raise InputError(f"run {ref}", f"no run in {redact_text(uri)} has this id, id prefix or run name")
    if len(found) > 1:
        shown = ", ".join(f"{rid} ({r.info.run_name})" for rid, r in sorted(found.items())[:5])
        more = f" … and {len(found) - 5} more" if len(found) > 5 else ""
        raise InputError(f"run {ref}", f"names {len(found)} runs: {shown}{more}; give more of the id")
    return _logged(client, next(iter(found.values())))


def find_runs(uri: str, experiment: str, params: Mapping[str, str]) -> list[LoggedRun]:
    """The finished stage runs of `experiment` whose params equal `params`, oldest first."""
    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise InputError(f"experiment {experiment}", f"no such experiment in {redact_text(uri)}")
    parts = ["attributes.status = 'FINISHED'"]
    for key, value in params.items():
        if "`" in key:
            raise InputError("--param", "an MLflow param name cannot hold `", field=f"{key}={value}")
        parts.append(equals(f"params.`{key}`", value)[0])
    runs = all_runs(client, [exp.experiment_id], " and ".join(parts), order_by=["attributes.start_time ASC"])
    return [
        _logged(client, r)
        for r in runs
        if r.data.tags.get("ragtrack.stage") in RUN_STAGES
        and all(r.data.params.get(k) == v for k, v in params.items())
    ]


def download_artifacts(uri: str, run: LoggedRun, dst: Path, path: str = "") -> Path:
    """Download the run's artifact `path` (all of them when empty) into `dst`; the local path.

    A run without that artifact (not logged by ragtrack, or the parent of a sweep or staged
    job) is bad input naming the run and what is missing.
    """
    client = _client(uri)
    dst.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"
    )  # a progress bar per file would fill the console
    try:
        local = Path(client.download_artifacts(run.run_id, path, str(dst)))
    except (MlflowException, OSError) as e:
        raise InputError(
            f"run {run.run_id}",
            f"cannot download artifact {path or '(all)'}: {redact_text(str(e)).splitlines()[0]}",
        ) from None
    return local


def log_artifacts(uri: str, run_id: str, local_dir: Path, artifact_path: str) -> None:
    """Add the files of `local_dir` to a finished run's artifacts under `artifact_path`."""
    _client(uri).log_artifacts(run_id, str(local_dir), artifact_path)


def read_cases(uri: str, run_id: str) -> pandas.DataFrame:
    """The run's per-case table (`cases.parquet`)."""
    import pandas as pd

    run = get_run(uri, run_id)
    with tempfile.TemporaryDirectory(prefix="ragtrack-") as tmp:
        return pd.read_parquet(download_artifacts(uri, run, Path(tmp), CASES_ARTIFACT))


def log_calibration(uri: str, run_id: str, metrics: dict[str, float], golden: Path, column: str) -> None:
    """Log calibration metrics (not NaN ones) to the run, with the golden file as an artifact and its version
    as a tag."""
    client = _client(uri)
    now = int(time.time() * 1000)
    entries = [Metric(k, v, now, 0) for k, v in sorted(metrics.items()) if not math.isnan(v)]
    tags = [
        RunTag("ragtrack.calibration_golden", f"{golden.stem}@{sha1_file(golden)}"),
        RunTag("ragtrack.calibration_column", column),
    ]
    client.log_batch(run_id, metrics=entries, tags=tags, synchronous=True)
    client.log_artifact(run_id, str(golden), "calibration")

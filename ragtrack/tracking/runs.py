"""Reading a logged run back and adding to it: its per-case table, and metrics computed after it ended (calibration)."""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow.entities import Metric, RunTag
from mlflow.exceptions import MlflowException

from ragtrack.errors import InputError
from ragtrack.hashing import sha1_file
from ragtrack.redact import redact_text
from ragtrack.tracking.session import connect
from ragtrack.tracking.store import sqlite_path

if TYPE_CHECKING:
    import pandas

__all__ = ["CASES_ARTIFACT", "log_calibration", "read_cases"]

CASES_ARTIFACT = "cases.parquet"


def _client(uri: str, run_id: str):
    db = sqlite_path(uri)
    if db is not None and not db.exists():
        raise InputError("--tracking-uri", f"no tracking store at {db}")
    client = connect(uri)
    try:
        client.get_run(run_id)
    except MlflowException:
        raise InputError("--run", f"no run {run_id!r} in {redact_text(uri)}") from None
    return client


def read_cases(uri: str, run_id: str) -> "pandas.DataFrame":
    """The run's per-case table (`cases.parquet`)."""
    import pandas as pd

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one small file: no bar on the console
    client = _client(uri, run_id)
    with tempfile.TemporaryDirectory(prefix="ragtrack-") as tmp:
        try:
            path = client.download_artifacts(run_id, CASES_ARTIFACT, tmp)
        except (MlflowException, OSError):
            raise InputError("--run", f"run {run_id} has no {CASES_ARTIFACT} (a staged or sweep parent? use a stage's run)") from None
        return pd.read_parquet(path)


def log_calibration(uri: str, run_id: str, metrics: dict[str, float], golden: Path, column: str) -> None:
    """Log calibration metrics (not NaN ones) to the run, with the golden file as an artifact and its version as a tag."""
    client = _client(uri, run_id)
    now = int(time.time() * 1000)
    entries = [Metric(k, v, now, 0) for k, v in sorted(metrics.items()) if not math.isnan(v)]
    tags = [RunTag("ragtrack.calibration_golden", f"{golden.stem}@{sha1_file(golden)}"), RunTag("ragtrack.calibration_column", column)]
    client.log_batch(run_id, metrics=entries, tags=tags, synchronous=True)
    client.log_artifact(run_id, str(golden), "calibration")
